"""Checks for single values of the pool file: booleans, names, env var names, URLs, GGUF refs.

Each raises ``ValueError`` with a message that says what to write instead; pydantic attaches the
field path and :mod:`pool.config` adds the file and line.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from runners.gguf_models import MODELS as LOCAL_GGUF_MODELS

# Keys of the GGUF models the managed llama.cpp server can prepare (pip extra `local`); the
# registry in runners.gguf_models is the one source. Anything else must be a .gguf path.
KNOWN_GGUF: tuple[str, ...] = tuple(LOCAL_GGUF_MODELS)

_TRUE_WORDS = frozenset({"true", "yes", "on"})
_FALSE_WORDS = frozenset({"false", "no", "off"})
_THINK_LEVELS = ("low", "medium", "high")
_NAME = re.compile(r"[A-Za-z0-9._:/@+-]{1,128}")  # fullmatch: "$" would allow a final \n
_ENV_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
ENV_VAR_MAX_CHARS = 128
# Prefixes of real API keys, case-sensitive as the providers issue them, so env var names such
# as HF_TOKEN or BEARER_TOKEN are not mistaken for keys.
_KEY_PREFIXES = (
    "sk-", "sk_", "gsk_", "xai-", "hf_", "ghp_", "github_pat_", "AIza", "pk-", "Bearer",
)  # fmt: skip
_API_KEY_ENV_HINT = (
    "api_key_env must be the NAME of an environment variable (letters, digits, _; not starting "
    f"with a digit; at most {ENV_VAR_MAX_CHARS} characters), not a key; the value was not "
    "printed. Export the key (export DEEPSEEK_API_KEY=...) and write its name here "
    "(api_key_env: DEEPSEEK_API_KEY)"
)
_URL_EXAMPLE = "e.g. http://localhost:8000/v1 or https://api.deepseek.com/v1"


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
    raise ValueError(
        f"think must be true/false (or yes/no/on/off) or one of {', '.join(_THINK_LEVELS)}; "
        f"got {value!r}"
    )


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


def looks_like_api_key(value: str) -> bool:
    """Heuristic: a known key prefix, or a long token with digits and no word separators."""
    if value.startswith(_KEY_PREFIXES):
        return True
    has_digit = any(c.isdigit() for c in value)
    mixed_case = any(c.islower() for c in value) and any(c.isupper() for c in value)
    return (len(value) >= 20 and "_" not in value and has_digit) or (
        len(value) >= 32 and mixed_case and has_digit
    )


def check_api_key_env(value: str) -> str:
    """The NAME of the env var holding the key; the key itself never goes in the file.

    The message never contains the value: a wrong value is most often the pasted key.
    """
    if len(value) > ENV_VAR_MAX_CHARS or not _ENV_VAR.fullmatch(value) or looks_like_api_key(value):
        raise ValueError(_API_KEY_ENV_HINT)
    return value


def check_base_url(value: str) -> str:
    """An http(s) URL with a host, an optional port 1-65535 and a path; no userinfo, query,
    fragment or whitespace. Stored without a trailing slash, since runners append paths.

    A URL with ``user:pass@`` is never echoed (the password would end up in logs); keys go in
    the environment variable that ``api_key_env`` names.
    """
    authority = re.split(r"[/?#]", value.partition("://")[2] if "://" in value else value)[0]
    if "@" in authority:
        raise ValueError(
            "base_url must not contain a user name or password (user:pass@host); the value was "
            "not printed because it may hold a password. Remove them, put the key in an "
            "environment variable and name it in api_key_env"
        )
    if "?" in value or "#" in value:  # not printed: a query is where keys get pasted
        raise ValueError(
            "base_url must not have a query (?) or fragment (#): request paths such as "
            "/chat/completions are appended to it; remove them (the value was not printed)"
        )
    shown = _shown_url(value)
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError(
            f"base_url {shown} contains spaces or control characters; remove them "
            "(a space inside a URL path is written %20)"
        )
    try:
        parts = urlsplit(value)
    except ValueError as exc:  # e.g. an unbalanced [ around an IPv6 host
        raise ValueError(f"base_url {shown} is not a valid URL ({exc}); {_URL_EXAMPLE}") from None
    if parts.scheme not in ("http", "https") or not value.lower().startswith(f"{parts.scheme}://"):
        raise ValueError(
            f"base_url {shown} must start with http:// or https:// and a host; {_URL_EXAMPLE}"
        )
    if not parts.hostname:
        raise ValueError(f"base_url {shown} has no host after {parts.scheme}://; {_URL_EXAMPLE}")
    port = _port_text(parts.netloc)
    if port is not None and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise ValueError(
            f"base_url {shown} has port {port!r}; a port is a number from 1 to 65535 "
            "(or leave out ':port' for the scheme's default)"
        )
    return value.rstrip("/")


def _shown_url(value: str) -> str:
    """The URL for a message: quoted and shortened; withheld if it has an '@' anywhere."""
    if "@" in value:
        return "(not printed: it contains '@')"
    if not re.match(r"(?i)https?://", value):  # not a URL: maybe a key pasted on the wrong line
        return "(not printed: it is not an http(s) URL)"
    return repr(value) if len(value) <= 80 else repr(value[:77] + "...")


def _port_text(netloc: str) -> str | None:
    """The text after the host's last ':' (None when there is no port); IPv6 hosts are [..]."""
    host_end = netloc.rfind("]") + 1 if netloc.startswith("[") else 0
    _, colon, port = netloc[host_end:].rpartition(":")
    return port if colon else None


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
