"""Pairwise ratings per family and per bucket (``pairwise.json``), from the scores already there.

A *scope* is one family (all its items) or one leaderboard bucket. Inside a scope the score of an
entrant on an item is its ``value`` (scored rows allowed by ``--common``); the items × entrants
matrix gives the battles (see :mod:`routing.stats.rating_fits`). Entrants that meet no other entrant on any
item are left out of the scope's ratings. Families never mix: a scope holds one family's items.

Online Elo is ``eval.elo_ratings`` over shuffled orders (every scope's orders are played side by
side in one pass: :func:`routing.stats.rating_fits.elo_over_orders_many`); above ``elo_max_battles`` battles
a seeded random sample of that many is shuffled instead, and ``elo.battles_used`` says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from eval.items.scores import FAMILIES
from routing.boards.leaderboard import BUCKET_KINDS, Bucket
from routing.load.table import SCORED, ScoreTable, codes_in_use
from routing.stats.intervals import json_number
from routing.stats.rating_fits import (
    LOSS,
    NONE,
    TIE,
    WIN,
    bootstrap_outcome_counts,
    bradley_terry,
    elo_over_orders_many,
    outcome_counts,
    outcome_matrix,
    overall_win_rates,
    pair_index,
    win_rate_matrix,
)

ELO_SCORE = {WIN: 1.0, LOSS: 0.0, TIE: 0.5}


@dataclass(frozen=True)
class PairwiseOptions:
    bt_rounds: int = 100
    elo_rounds: int = 50
    elo_k: float = 16.0
    elo_max_battles: int = 4_000
    bt_virtual_ties: float = 1.0
    seed: int = 0


def score_matrix(
    table: ScoreTable, rows: np.ndarray, values_of_rows: np.ndarray | None = None
) -> tuple[np.ndarray, list[int], np.ndarray]:
    """(items × entrants matrix with NaN, entrant indices, item codes) for the given scored rows;
    the matrix holds the rows' ``value``, or ``values_of_rows`` (aligned with ``rows``) when given."""
    row_values = table.value[rows] if values_of_rows is None else np.asarray(values_of_rows, dtype=float)
    of_rows = table.entrant[rows]
    present = codes_in_use(of_rows, len(table.entrants))
    entrants = present.tolist()
    item_of_rows = table.item[rows]
    items = codes_in_use(item_of_rows, len(table.items))
    position = np.zeros(
        len(table.items), dtype=np.int32
    )  # np.unique(..., return_inverse=True) without sorting the rows
    position[items] = np.arange(len(items), dtype=np.int32)
    item_pos = position[item_of_rows]
    column = np.zeros(len(table.entrants), dtype=np.int64)
    column[present] = np.arange(len(present))
    values = np.full((len(items), len(entrants)), np.nan)
    values[item_pos, column[of_rows]] = row_values
    return values, entrants, items


ELO_ROWS = 4096  # item rows counted at a time when sampling Elo battles


def scope_ratings(values: np.ndarray, labels: Sequence[str], options: PairwiseOptions) -> dict[str, Any]:
    """Win rates, Elo over orders and Bradley–Terry for one items × models score matrix."""
    pending: list[tuple[dict[str, Any], dict[str, Any]]] = []
    result = _scope_ratings(values, labels, options, pending)
    _play_elo(pending, options)
    return result


def _scope_ratings(
    values: np.ndarray,
    labels: Sequence[str],
    options: PairwiseOptions,
    pending: list[tuple[dict[str, Any], dict[str, Any]]],
    out: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """:func:`scope_ratings` added to ``out`` (a new dict by default), with its ``elo`` left to
    :func:`_play_elo`: ``out`` and its battles go to ``pending``."""
    out = {} if out is None else out
    outcomes = outcome_matrix(values)
    counts = outcome_counts(outcomes)
    m = len(labels)
    played = np.zeros(m, dtype=bool)
    first, second = pair_index(m)
    met = counts.sum(axis=1) > 0
    played[first[met]] = played[second[met]] = True
    if played.sum() < 2:
        out.update({"models": list(labels), "battles": 0, "skipped": "fewer than two models share a scored item"})
        return out
    if not played.all():  # drop entrants that met nobody, then recount over the rest
        keep = np.flatnonzero(played)
        _scope_ratings(values[:, keep], [labels[i] for i in keep], options, pending, out)
        out["left_out"] = [labels[i] for i in np.flatnonzero(~played)]
        return out
    boot = bootstrap_outcome_counts(outcomes, options.bt_rounds, options.seed)
    bt = bradley_terry(counts, boot, m, options.bt_virtual_ties)
    rate, games = win_rate_matrix(counts, m)
    overall = overall_win_rates(counts, m)
    order = np.argsort(-bt["rating"], kind="stable")
    names = [labels[i] for i in order]
    out.update(
        {
            "models": names,
            "items": int(values.shape[0]),
            "battles": int(counts.sum()),
            "ties": int(counts[:, TIE].sum()),
            "win_rate": {
                "matrix": [[json_number(rate[i, j]) for j in order] for i in order],
                "games": [[int(games[i, j]) for j in order] for i in order],
                "overall": {labels[i]: json_number(overall[i]) for i in order},
            },
            "elo": None,  # filled in by _play_elo, in this place
            "bradley_terry": {
                "rounds": options.bt_rounds,
                "virtual_ties": options.bt_virtual_ties,
                "ratings": {
                    labels[i]: {
                        "rating": json_number(bt["rating"][i]),
                        "ci": [json_number(bt["lower"][i]), json_number(bt["upper"][i])],
                        "rank": int(bt["rank"][i]),
                    }
                    for i in order
                },
            },
        }
    )
    pending.append((out, {**_elo_battles(outcomes, labels, options), "order": order}))
    return out


def _elo_battles(outcomes: np.ndarray, labels: Sequence[str], options: PairwiseOptions) -> dict[str, Any]:
    """The battles online Elo plays: every (item, pair) with an outcome, in item-major order, or a
    seeded sample of ``elo_max_battles`` of them — drawn by rank among the battles, so a family of
    10^5 items × 1,225 pairs never lists its 10^8 battles to sample 4,000."""
    per_item = _battles_per_item(outcomes)
    total = int(per_item.sum())
    if total > options.elo_max_battles:
        rng = np.random.default_rng([options.seed, total])
        flat = _battle_positions(
            outcomes, per_item, np.sort(rng.choice(total, size=options.elo_max_battles, replace=False))
        )
    else:
        flat = np.flatnonzero(outcomes.ravel() != NONE)
    first, second = pair_index(len(labels))
    pair = flat % outcomes.shape[1]
    codes = outcomes.ravel()[flat]
    return {
        "game": (
            [labels[i] for i in first[pair]],
            [labels[i] for i in second[pair]],
            [ELO_SCORE[int(c)] for c in codes],
            list(labels),
        ),
        "battles_used": len(flat),
    }


def _battles_per_item(outcomes: np.ndarray) -> np.ndarray:
    """Battles (pairs with an outcome) per item row, counted a block of rows at a time."""
    parts = [(outcomes[start : start + ELO_ROWS] != NONE).sum(axis=1) for start in range(0, len(outcomes), ELO_ROWS)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def _battle_positions(outcomes: np.ndarray, per_item: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Flat positions in ``outcomes`` of the battles of the given (sorted) ranks among all its battles
    (= ``np.flatnonzero(outcomes.ravel() != NONE)[ranks]``): only the item rows holding a drawn rank
    are listed, a block of them at a time."""
    ends = np.cumsum(per_item)
    rows = np.searchsorted(ends, ranks, side="right")
    within = ranks - (ends[rows] - per_item[rows])  # the drawn battle's place among its row's battles
    holding = np.unique(rows)
    out = np.empty(len(ranks), dtype=np.int64)
    pairs = outcomes.shape[1]
    step = max(1, ELO_ROWS * 256 // max(pairs, 1))
    for start in range(0, len(holding), step):
        block = holding[start : start + step]
        listed = np.flatnonzero(outcomes[block] != NONE)  # the block's battles, row by row
        first_of_row = np.cumsum(per_item[block]) - per_item[block]
        mine = (rows >= block[0]) & (rows <= block[-1])
        local = first_of_row[np.searchsorted(block, rows[mine])] + within[mine]
        out[mine] = block[listed[local] // pairs] * pairs + listed[local] % pairs
    return out


def _play_elo(pending: Sequence[tuple[dict[str, Any], dict[str, Any]]], options: PairwiseOptions) -> None:
    """Online Elo of every pending scope, all played in one pass (each with its own seeded orders)."""
    runs = elo_over_orders_many(
        [battles["game"] for _, battles in pending], options.elo_rounds, options.elo_k, options.seed
    )
    for (result, battles), elo in zip(pending, runs, strict=True):
        labels = battles["game"][3]
        result["elo"] = {
            "k": options.elo_k,
            "rounds": options.elo_rounds,
            "battles_used": battles["battles_used"],
            "ratings": {
                labels[i]: {
                    "median": json_number(elo["median"][i]),
                    "ci": [json_number(elo["lower"][i]), json_number(elo["upper"][i])],
                }
                for i in battles["order"]
            },
        }


def build_pairwise(
    table: ScoreTable, buckets: Sequence[Bucket], keep: np.ndarray, options: PairwiseOptions
) -> list[dict[str, Any]]:
    """Every family scope, then every bucket scope, each with its ratings."""
    allowed = keep & (table.status == SCORED)

    def family_rows(family: str) -> np.ndarray:
        return np.flatnonzero(allowed & (table.family == table.code("family", family)))

    scopes, pending = [], []
    for family in FAMILIES:
        if family not in table.vocab["family"]:
            continue
        scopes.append(_scope(table, family_rows(family), family, family, "family", options, pending))
    in_family: tuple[str, np.ndarray] | None = None  # the rows of the family the last bucket was in
    for bucket in buckets:
        category = dict(BUCKET_KINDS[bucket.family])[bucket.kind]
        column = getattr(table, category)
        if in_family is None or in_family[0] != bucket.family:
            in_family = (bucket.family, family_rows(bucket.family))
        rows = in_family[1][column[in_family[1]] == table.code(category, bucket.name)]
        scopes.append(_scope(table, rows, bucket.id, bucket.family, "bucket", options, pending))
    _play_elo(pending, options)
    return scopes


def _scope(
    table: ScoreTable,
    rows: np.ndarray,
    scope_id: str,
    family: str,
    level: str,
    options: PairwiseOptions,
    pending: list[tuple[dict[str, Any], dict[str, Any]]],
) -> dict[str, Any]:
    values, entrants, _ = score_matrix(table, rows)
    labels = [table.entrants[e].label for e in entrants]
    return _scope_ratings(values, labels, options, pending, {"scope": scope_id, "family": family, "level": level})
