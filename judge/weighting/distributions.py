"""The value distribution a judge put at one position of its verdict.

Scores (0..10). An alternative's text from the value's first character on is read as: digits then a
non-digit (``"8,"``, ``"10"}``) — that number; digits ending the token — that number too, except
``"1"``, which may be the first token of ``"10"``: for the generated token its continuation is read
from the next position (P("0") against P(a non-digit), renormalised), for an alternative it is not
known. Numbers outside 0..10, decimals and non-numbers are not scores and are left out; the
probabilities of the valid scores are renormalised to sum to 1. An unresolved ``"1"`` is left out
too when its probability is at most :data:`AMBIGUOUS_MAX` of the scores' (too little to move the
expectation by more than ~0.2 on 0..10); above that the weighted score is absent.

Labels (``true``/``false``, ``yes``/``no``, ``success``/``failure``, claim labels). An alternative is
the label its leading letters are the start of (or that they start with), when exactly one label
fits; the probabilities of the fitting alternatives are renormalised over the labels.

Alternatives outside the server's top-k are not seen: renormalising over those that are is the
estimate (G-Eval's).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from judge.weighting.positions import TokenView

SCORE_RANGE = range(0, 11)
AMBIGUOUS_MAX = 0.02
_DIGITS = re.compile(r"\d+")
_LETTERS = re.compile(r"[a-z_]+")
YES_LABELS, NO_LABELS = ("true", "yes"), ("false", "no")


def _score_of(rest: str) -> int | str | None:
    """The score an alternative's text spells from the value's start: a number, ``"1?"`` (may be 10), or None."""
    m = _DIGITS.match(rest)
    if m is None:
        return None
    digits, after = m.group(), rest[m.end() :]
    if after.startswith((".", "e", "E")) or (len(digits) > 1 and digits[0] == "0"):
        return None
    value = int(digits)
    if value not in SCORE_RANGE:
        return None
    return "1?" if digits == "1" and not after else value


def _continues_to_ten(view: TokenView, i: int) -> float | None:
    """P(the number goes on to "10") after a generated ``"1"`` ending token ``i``, from token ``i + 1``."""
    if i + 1 >= len(view.tokens):
        return 0.0  # the reply ends there: the number is 1
    ten = one = 0.0
    for text, lp in view.choices(i + 1, view.starts[i + 1]):
        m = _DIGITS.match(text)
        if m is None:
            one += math.exp(lp)
        elif m.group() == "0":
            ten += math.exp(lp)
    return None if ten + one == 0 else ten / (ten + one)


def expected_score(view: TokenView, char: int) -> float | None:
    """E[score] over the judge's 0..10 score tokens at the value starting at ``char`` (module doc)."""
    i = view.at(char)
    if i is None:
        return None
    mass = dict.fromkeys(SCORE_RANGE, 0.0)
    ambiguous = 0.0
    generated = view.tokens[i][0][char - view.starts[i] :]
    for rest, lp in view.choices(i, char):
        score = _score_of(rest)
        p = math.exp(lp)
        if score == "1?":
            ten = _continues_to_ten(view, i) if rest == generated else None
            if ten is None:
                ambiguous += p
            else:
                mass[10] += p * ten
                mass[1] += p * (1 - ten)
        elif isinstance(score, int):
            mass[score] += p
    total = sum(mass.values())
    if total <= 0 or ambiguous > AMBIGUOUS_MAX * (total + ambiguous):
        return None
    return sum(v * p for v, p in mass.items()) / total


def label_probabilities(view: TokenView, char: int, labels: Sequence[str]) -> dict[str, float] | None:
    """P(label) over ``labels`` at the value starting at ``char``; None when no alternative fits any."""
    i = view.at(char)
    if i is None:
        return None
    mass = dict.fromkeys(labels, 0.0)
    for rest, lp in view.choices(i, char):
        m = _LETTERS.match(rest.lower())
        if m is None:
            continue
        word = m.group()
        fits = [label for label in labels if label.startswith(word) or word.startswith(label)]
        if len(fits) == 1:
            mass[fits[0]] += math.exp(lp)
    total = sum(mass.values())
    return None if total <= 0 else {label: p / total for label, p in mass.items()}


def p_yes(view: TokenView, char: int, yes: Sequence[str] = YES_LABELS, no: Sequence[str] = NO_LABELS) -> float | None:
    """P(yes) at the value starting at ``char``: the ``yes`` labels' share of the yes and no labels'."""
    probs = label_probabilities(view, char, (*yes, *no))
    return None if probs is None else sum(probs[label] for label in yes)
