"""Where a verdict's values are in its text, and which generated token each one starts in.

:func:`value_spans` reads the first JSON object of a reply (from its first ``{``; text after the
object is ignored) and gives, for every scalar value, its path (keys and list indices) and the
character where it starts — for a string, the first character inside the quotes. A reply that is not
such an object gives None: a verdict the parse ladder had to repair has no generated position to read.

:class:`TokenView` lines the generated tokens up with the text: the tokens must spell the reply
exactly (or spell text of which the reply is a part), else nothing is weighed.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

Path = tuple[str | int, ...]
Alternatives = tuple[tuple[str, float], ...]

_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None}


class _Bad(ValueError):
    pass


def value_spans(text: str) -> dict[Path, tuple[int, Any]] | None:
    """``{path: (start character, value)}`` for every scalar of the reply's first JSON object (module doc)."""
    start = text.find("{")
    if start < 0:
        return None
    out: dict[Path, tuple[int, Any]] = {}
    try:
        _Scanner(text, out).value(start, ())
    except (ValueError, IndexError):  # _Bad, or json.JSONDecodeError (a control character in a string)
        return None
    return out


class _Scanner:
    def __init__(self, text: str, out: dict[Path, tuple[int, Any]]) -> None:
        self.text, self.out = text, out

    def ws(self, i: int) -> int:
        while i < len(self.text) and self.text[i] in " \t\r\n":
            i += 1
        return i

    def value(self, i: int, path: Path) -> int:
        i = self.ws(i)
        c = self.text[i]
        if c == "{":
            return self.obj(i + 1, path)
        if c == "[":
            return self.arr(i + 1, path)
        if c == '"':
            end, value = self.string(i)
            self.out[path] = (i + 1, value)
            return end
        for word, value in _LITERALS.items():
            if self.text.startswith(word, i):
                self.out[path] = (i, value)
                return i + len(word)
        m = _NUMBER.match(self.text, i)
        if m is None:
            raise _Bad(f"no JSON value at {i}")
        self.out[path] = (i, json.loads(m.group()))
        return m.end()

    def string(self, i: int) -> tuple[int, str]:
        value, end = json.decoder.scanstring(self.text, i + 1)
        return end, value

    def obj(self, i: int, path: Path) -> int:
        i = self.ws(i)
        if self.text[i] == "}":
            return i + 1
        while True:
            i = self.ws(i)
            if self.text[i] != '"':
                raise _Bad(f"no key at {i}")
            i, key = self.string(i)
            i = self.ws(i)
            if self.text[i] != ":":
                raise _Bad(f"no colon at {i}")
            i = self.ws(self.value(i + 1, (*path, key)))
            if self.text[i] == "}":
                return i + 1
            if self.text[i] != ",":
                raise _Bad(f"no comma at {i}")
            i += 1

    def arr(self, i: int, path: Path) -> int:
        i = self.ws(i)
        if self.text[i] == "]":
            return i + 1
        n = 0
        while True:
            i = self.ws(self.value(i, (*path, n)))
            n += 1
            if self.text[i] == "]":
                return i + 1
            if self.text[i] != ",":
                raise _Bad(f"no comma at {i}")
            i += 1


def tokens_of(logprobs: Iterable[Any]) -> list[tuple[str, float, Alternatives]]:
    """Token logprobs as (token, logprob, alternatives), from ``runners.base.TokenLogprob`` objects or
    their stored JSON form ``[token, logprob, [[alt, logprob], ...]]``."""
    out = []
    for entry in logprobs:
        if hasattr(entry, "token"):
            token, logprob, top = entry.token, entry.logprob, entry.top
        else:
            token, logprob, top = entry
        out.append((str(token), float(logprob), tuple((str(t), float(lp)) for t, lp in top)))
    return out


@dataclass(frozen=True)
class TokenView:
    """The generated tokens lined up with the reply's characters."""

    tokens: Sequence[tuple[str, float, Alternatives]]
    starts: Sequence[int]  # character where each token starts, in the reply's coordinates
    text: str  # what the tokens spell, in the reply's coordinates

    @classmethod
    def of(cls, reply: str, logprobs: Iterable[Any] | None) -> TokenView | None:
        """None when there are no logprobs or the tokens do not spell the reply (module doc)."""
        if logprobs is None:
            return None
        tokens = tokens_of(logprobs)
        spelled = "".join(t for t, _, _ in tokens)
        if not tokens or reply not in spelled:
            return None
        offset = spelled.index(reply)
        starts, at = [], -offset
        for token, _, _ in tokens:
            starts.append(at)
            at += len(token)
        return cls(tokens, starts, spelled[offset:])

    def at(self, char: int) -> int | None:
        """The index of the token that generated the reply's character ``char``."""
        i = bisect.bisect_right(self.starts, char) - 1
        if i < 0 or char >= self.starts[i] + len(self.tokens[i][0]):
            return None
        return i

    def choices(self, i: int, char: int) -> list[tuple[str, float]]:
        """The alternatives at token ``i`` as the text each would have put from ``char`` on: only those
        that agree with the generated token before ``char`` (its prefix); the generated token included."""
        token, logprob, top = self.tokens[i]
        prefix = token[: char - self.starts[i]]
        seen: dict[str, float] = {}
        for text, lp in ((token, logprob), *top):
            if text.startswith(prefix) and text not in seen:
                seen[text] = lp
        return [(text[len(prefix) :], lp) for text, lp in seen.items()]
