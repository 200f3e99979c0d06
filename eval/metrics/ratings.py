"""Pairwise win rates and sequential Elo (catalogue items 13 and 14).

These are the catalogue's simple, order-dependent definitions; the routing package fits
order-free Bradley–Terry ratings with bootstrap intervals on top of the same battle records.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from eval._checks import require_real, require_sequence

_VERDICT_POINTS = {"a": (1.0, 0.0), "b": (0.0, 1.0), "tie": (0.5, 0.5)}


def _pair(kind: str, index: int, entry: Any) -> tuple[Hashable, Hashable, Any]:
    # The usual [str, str, result] row needs no ABC isinstance checks (they cost 4x an Elo update).
    if type(entry) in (list, tuple) and len(entry) == 3 and type(entry[0]) is str and type(entry[1]) is str:
        return entry[0], entry[1], entry[2]
    require_sequence(f"{kind}[{index}]", entry)
    if len(entry) != 3:
        raise ValueError(f"{kind}[{index}] must be [model_a, model_b, result], got {len(entry)} values")
    a, b, result = entry
    for side, name in (("model_a", a), ("model_b", b)):
        if not isinstance(name, Hashable) or isinstance(name, (list, dict, set)):
            raise TypeError(f"{kind}[{index}] {side} must be a model name, got {type(name).__name__}")
    return a, b, result


def win_rates(verdicts: list[list[Any]]) -> dict[Hashable, float]:
    """Points / games per model: a win is 1, a tie 0.5 to each side, a loss 0; one game per side per verdict."""
    require_sequence("verdicts", verdicts)
    points: dict[Hashable, float] = {}
    games: dict[Hashable, int] = {}
    for index, entry in enumerate(verdicts):
        a, b, result = _pair("verdicts", index, entry)
        if result not in _VERDICT_POINTS:
            raise ValueError(f"verdicts[{index}] result must be 'a', 'b' or 'tie', got {result!r}")
        points_a, points_b = _VERDICT_POINTS[result]
        for model, gained in ((a, points_a), (b, points_b)):
            points[model] = points.get(model, 0.0) + gained
            games[model] = games.get(model, 0) + 1
    return {model: points[model] / games[model] for model in games}


def elo_ratings(matches: list[list[Any]], k: float) -> dict[Hashable, float]:
    """Sequential Elo from 1000, match by match.

    E_a = 1/(1 + 10^((R_b − R_a)/400)); R_a += k(s_a − E_a); R_b += k((1 − s_a) − (1 − E_a)).
    Both updates use the ratings from before the match, so the total rating is conserved.
    """
    require_sequence("matches", matches)
    k_factor = require_real("k", k)
    ratings: dict[Hashable, float] = {}
    for index, entry in enumerate(matches):
        a, b, score_a = _pair("matches", index, entry)
        if isinstance(score_a, bool) or score_a not in (0, 0.5, 1):
            raise ValueError(f"matches[{index}] score_a must be 1, 0.5 or 0, got {score_a!r}")
        rating_a = ratings.setdefault(a, 1000.0)
        rating_b = ratings.setdefault(b, 1000.0)
        expected_a = 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / 400.0))
        ratings[a] = rating_a + k_factor * (score_a - expected_a)
        ratings[b] = ratings[b] + k_factor * ((1 - score_a) - (1 - expected_a))
    return ratings
