"""Checks for single values of the pool file: booleans, names, think levels, GGUF refs (env var
names and URLs are checked in :mod:`runners.settings`, beside the backends that use them).

Each raises ``ValueError`` with a message that says what to write instead; pydantic attaches the
field path and :mod:`pool.config` adds the file and line.
"""

from __future__ import annotations

import re
from typing import Any

from runners.llamacpp.gguf_models import MODELS as LOCAL_GGUF_MODELS

# Keys of the GGUF models the managed llama.cpp server can prepare (pip extra `local`); the
# registry in runners.llamacpp.gguf_models is the one source. Anything else must be a .gguf path.
KNOWN_GGUF: tuple[str, ...] = tuple(LOCAL_GGUF_MODELS)

_TRUE_WORDS = frozenset({"true", "yes", "on"})
_FALSE_WORDS = frozenset({"false", "no", "off"})
_THINK_LEVELS = ("low", "medium", "high")
_NAME = re.compile(r"[A-Za-z0-9._:/@+-]{1,128}")  # fullmatch: "$" would allow a final \n


def parse_yaml_bool(value: Any) -> bool:
    """true/false, plus yes/no/on/off in any case (the loader keeps those words as text)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE_WORDS | _FALSE_WORDS:
        return value.strip().lower() in _TRUE_WORDS
    raise ValueError(f"expected true or false (yes/no/on/off also work), got {value!r}")


def parse_think(value: Any) -> bool | str | None:
    """Ollama's reasoning switch: a boolean word, or an effort level low/medium/high."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _THINK_LEVELS:
            return word
        if word in _TRUE_WORDS | _FALSE_WORDS:
            return word in _TRUE_WORDS
    raise ValueError(f"think must be true/false (or yes/no/on/off) or one of {', '.join(_THINK_LEVELS)}; got {value!r}")


def check_model_name(name: str) -> str:
    """Names become file names, so only [A-Za-z0-9._:/@+-], no empty or dot-only path parts."""
    if not _NAME.fullmatch(name):
        bad = sorted({c for c in name if not re.match(r"[A-Za-z0-9._:/@+-]", c)})
        shown = ", ".join(repr(c) for c in bad) if bad else "length"
        raise ValueError(
            f"name {name!r} has characters that cannot name a file ({shown}); use only letters, "
            f"digits and . _ : / @ + - (at most 128)"
        )
    if any(part in ("", ".", "..") for part in name.split("/")):
        raise ValueError(f"name {name!r} has an empty, '.' or '..' part between slashes")
    return name


def check_gguf(value: str | None) -> str | None:
    """Return a problem description, or None when ``value`` is a known key or a .gguf path."""
    known = ", ".join(KNOWN_GGUF)
    if value is None:
        return f"llamacpp models need gguf: one of {known}, or a path to a .gguf file"
    if value in KNOWN_GGUF or value.lower().endswith(".gguf"):
        return None
    return f"unknown gguf '{value}'; use one of {known}, or a path ending in .gguf"


def file_stem(name: str) -> str:
    """A model name as one file-name component: '/' -> '%2F', ':' -> '%3A' (reversible)."""
    return name.replace("%", "%25").replace("/", "%2F").replace(":", "%3A")
