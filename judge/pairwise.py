"""Pairwise judging: a judge's two verdicts on one pair, in both orders, become one battle.

A judge asked "A or B?" favours a position (MT-Bench and Chatbot Arena report it for every judge),
so each pair of answers (``a``, ``b``) to one item is asked twice: ``a`` shown as A (order ``ab``)
and ``b`` shown as A (order ``ba``). The battle (:func:`battle_outcome`):

- ``a`` wins only when both orders name ``a`` (``ab`` → A and ``ba`` → B), ``b`` likewise;
- anything else where both orders gave a verdict is a **tie** (they disagree, or either says tie);
- a missing verdict in either order (a failed call, a reply unparseable after its re-ask) is no battle.

Position consistency, per judge (:func:`position_consistency`), over its pairs with both verdicts:
``consistent`` = share whose two orders agree (the same model, or tie both times);
``first_position`` = share of its non-tie verdicts that pick the answer shown first (0.5 = no
position preference); ``pairs`` and ``verdicts`` say over how many. A judge that prefers the first
position half of the time at random, and is otherwise right, is consistent on about half its pairs:
the rest become ties, never wins for whoever happened to be shown first.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Side = Literal["A", "B", "tie"]
Outcome = Literal["a", "b", "tie"]


@dataclass(frozen=True)
class PairVerdicts:
    """One judge's verdicts on one pair of answers to one item: ``ab`` with ``a`` shown as A, ``ba``
    with ``b`` shown as A; None where the judge gave none."""

    judge: str
    item_id: str
    a: str
    b: str
    ab: Side | None
    ba: Side | None


def _named(order: str, side: Side) -> Outcome:
    """The model a verdict names, as ``a`` / ``b`` / ``tie``."""
    if side == "tie":
        return "tie"
    return ("a" if side == "A" else "b") if order == "ab" else ("b" if side == "A" else "a")


def battle_outcome(ab: Side | None, ba: Side | None) -> Outcome | None:
    """The battle of a pair from its two orders (module doc); None when either order has no verdict."""
    if ab is None or ba is None:
        return None
    first, second = _named("ab", ab), _named("ba", ba)
    return first if first == second else "tie"


def position_consistency(verdicts: Iterable[PairVerdicts]) -> dict[str, dict[str, float | int | None]]:
    """Per judge: ``pairs`` (both orders answered), ``consistent`` share, ``verdicts`` (non-tie ones
    counted for the position share) and ``first_position`` share (module doc); None without any."""
    tally: dict[str, list[int]] = {}
    for v in verdicts:
        pairs, agree, decided, first = tally.setdefault(v.judge, [0, 0, 0, 0])
        if v.ab is not None and v.ba is not None:
            pairs += 1
            agree += _named("ab", v.ab) == _named("ba", v.ba)
        for side in (v.ab, v.ba):
            if side in ("A", "B"):
                decided += 1
                first += side == "A"
        tally[v.judge] = [pairs, agree, decided, first]
    return {
        judge: {
            "pairs": pairs,
            "consistent": round(agree / pairs, 4) if pairs else None,
            "verdicts": decided,
            "first_position": round(first / decided, 4) if decided else None,
        }
        for judge, (pairs, agree, decided, first) in tally.items()
    }
