"""Tokenisation shared by the text metrics: one place for each normalisation rule."""

from __future__ import annotations

import string

_PUNCTUATION_TABLE = str.maketrans("", "", string.punctuation)
_ARTICLES = frozenset({"a", "an", "the"})


def squad_tokens(text: str) -> list[str]:
    """Lowercase, delete ``string.punctuation``, split on whitespace, drop a/an/the (SQuAD rule)."""
    return [w for w in text.lower().translate(_PUNCTUATION_TABLE).split() if w not in _ARTICLES]


def punctuation_free_key(text: str) -> str:
    """Lowercase, delete ``string.punctuation``, rejoin the words with single spaces (articles kept)."""
    return " ".join(text.lower().translate(_PUNCTUATION_TABLE).split())


def lower_tokens(text: str) -> list[str]:
    """Lowercase and split on whitespace, no other cleanup."""
    return text.lower().split()


def ngrams(tokens: list[str], n: int) -> list[tuple[str, ...]]:
    """The n consecutive-token windows of ``tokens`` (none when it has fewer than n tokens)."""
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]
