"""Leaderboards per metric family, side by side and never blended.

A *bucket* is one slice of one family that a router can send questions to; its id is
``family/kind/name``:

=============  ============================  ==========================================================
family         buckets (kind: from column)   statistics per cell (every one: value, 95% CI, n)
=============  ============================  ==========================================================
capability     task                          score = mean value (judge total / 40), pass_rate,
                                             judge sub-metric means (coverage, accuracy, safety, ...)
specialty      domain; rollups: system and   score, pass_rate, sub-metrics, safety_floor_rate,
               broad_area (clinical area)    unsupported_rate (when the judge recorded them)
orchestration  skill (gold type: routing,    score = accuracy
               tool_decision)
robustness     task (probes)                 score = success rate, pass_rate
exam           task                          score = accuracy / char-F1 / option F1, sub-metrics
tcm            task                          classification: macro_f1 (primary) + accuracy over the
                                             bucket's label set; tcm_case: score = CHIP total, p1..p4;
                                             LingLan tasks: score (DTR-F1, extraction F1, dose ...)
live           domain (given, or inferred    score = mean value (judge total / 40 against a reference
               by the router's classifier)   agent's answer: agreement with that agent, not truth),
                                             pass_rate, judge sub-metric means
=============  ============================  ==========================================================

A task whose items declare an objective check (SQL execution, API-call structure; ``eval.items.scores``)
is ranked by the check: its rows' value is the check's 1/0, so ``score`` is execution / call
accuracy, and the bucket's ``check`` names it. The judge's view of the same answers stays beside:
``judge_pass_rate`` and ``judge_score`` (its total / 40). Items whose check could not run are
scored by the judge and counted in ``check.judge_fallback_items``.

A cell is one entrant (model identity + judge identity) in one bucket: ``n`` scored items,
``infra_errors`` and ``unscorable`` counted but left out of every statistic, and ``truncated``: how
many of the ``n`` answers were cut at their token budget (``details.answer_flaw``), shown beside
the score so that a low score from a too-small ``max_tokens`` is not read as a weak model. Every statistic has a
95% interval and the rule that made it (``ci_method``: Wilson for proportions, t for continuous
means, see :mod:`routing.stats.intervals`); the cell also keeps its per-item primary values and median
latency, which the manifest's paired tests and tie rule use. The classification
label set is the sorted union of the bucket's gold labels and any ``details["labels"]`` (the item's
label set), the same for every entrant; a prediction outside it is wrong and adds no class.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from eval import macro_f1
from eval.gold_types import primary_metric_of
from eval.items.scores import CHECK_METRICS, FAMILIES, JUDGE_PASSED_METRIC, JUDGE_VALUE_METRIC
from routing.load.labels import LabelColumns
from routing.load.table import (
    INFRA_ERROR,
    SCORED,
    UNSCORABLE,
    Entrant,
    ScoreTable,
    group_rows,
)
from routing.stats.intervals import (
    CI_HULL,
    CI_WILSON,
    Estimate,
    hull_with_wilson,
    ratio_intervals,
    resampled_macro_f1,
    resampled_ratios_side_by_side,
    wilson_interval,
)

BUCKET_KINDS: dict[str, tuple[tuple[str, str], ...]] = {
    "capability": (("task", "task"),),
    "specialty": (("domain", "domain"), ("system", "system"), ("broad_area", "broad_area")),
    "orchestration": (("skill", "gold_type"),),
    "robustness": (("task", "task"),),
    "exam": (("task", "task"),),
    "tcm": (("task", "task"),),
    "live": (("domain", "domain"),),
}
# Row metrics shown under another name in a cell: the judge's verdict beside an objective check.
STAT_NAMES = {JUDGE_PASSED_METRIC: "judge_pass_rate", JUDGE_VALUE_METRIC: "judge_score"}


@dataclass(frozen=True)
class Cell:
    entrant: Entrant
    n: int
    infra_errors: int
    unscorable: int
    items: np.ndarray  # item codes of the scored rows, sorted
    stats: dict[str, Estimate]
    values: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per-item score (value column), aligned with items
    median_latency_s: float = float("nan")  # over the scored rows with a latency; NaN when none
    mean_completion_tokens: float = float("nan")
    mean_cost: float = float("nan")  # per scored item at the pool's prices; NaN when unpriced
    truncated: int = 0  # scored answers cut at their token budget

    def to_json(self, primary: str) -> dict[str, Any]:
        return {
            "model": self.entrant.label,
            "model_key": self.entrant.model.key,
            "judge": self.entrant.judge_key,
            "n": self.n,
            "infra_errors": self.infra_errors,
            "unscorable": self.unscorable,
            "truncated": self.truncated,
            "primary": self.stats[primary].to_json() if primary in self.stats else None,
            "metrics": {name: est.to_json() for name, est in self.stats.items()},
            "median_latency_s": _json_or_none(self.median_latency_s, 4),
            "mean_completion_tokens": _json_or_none(self.mean_completion_tokens, 1),
            "mean_cost": _json_or_none(self.mean_cost, 8),
        }


def _json_or_none(value: float, digits: int) -> float | None:
    return None if not np.isfinite(value) else round(float(value), digits)


@dataclass(frozen=True)
class Bucket:
    id: str
    family: str
    kind: str
    name: str
    primary: str  # the statistic buckets are ranked by: "score", or "macro_f1" for classification
    gold_types: tuple[str, ...]
    n_items: int
    cells: tuple[Cell, ...]  # best primary value first; cells without a value last
    check: dict[str, Any] | None = None  # {"kind", "metric", "judge_fallback_items"} when an objective check ranks it

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "family": self.family,
            "kind": self.kind,
            "name": self.name,
            "primary": self.primary,
            "gold_types": list(self.gold_types),
            "items": self.n_items,
            "check": self.check,
            "cells": [cell.to_json(self.primary) for cell in self.cells],
        }

    def value_of(self, cell: Cell) -> float:
        """The cell's primary statistic; −inf when it has none (no scored item)."""
        est = cell.stats.get(self.primary)
        return -np.inf if est is None or not np.isfinite(est.value) else est.value

    def ci_of(self, cell: Cell) -> tuple[float, float]:
        return cell.stats[self.primary].ci


# The statistics whose bootstrap draws a decision reads (paired bootstrap tests, the orchestrator's
# composite): a bucket's primary statistic, score or macro_f1. The others keep their intervals only,
# so a nightly's buckets do not hold rounds × cells × statistics draws.
DRAWS_KEPT = ("score", "macro_f1")
NO_DRAWS = np.zeros(0)


def _mean_columns(table: ScoreTable, rows: np.ndarray, family: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Statistic names and their (n × k) numerator / denominator columns for the ratio bootstrap."""
    names, nums, dens = [], [], []

    def add(name: str, values: np.ndarray, denominator: np.ndarray | None = None) -> None:
        values = values.astype(float, copy=False)  # a float32 sub-metric column, widened exactly
        denominator = None if denominator is None else denominator.astype(float, copy=False)
        present = ~np.isnan(values) if denominator is None else ~np.isnan(denominator)
        if not present.any():
            return
        names.append(name)
        nums.append(np.where(present, np.nan_to_num(values), 0.0))
        dens.append(np.where(present, 1.0 if denominator is None else np.nan_to_num(denominator), 0.0))

    add("score", table.value[rows])
    add("pass_rate", table.passed[rows])
    for metric, column in sorted(table.metrics.items()):
        if metric not in ("score", "pass_rate"):
            add(STAT_NAMES.get(metric, metric), column[rows])
    if family == "specialty":
        add("safety_floor_rate", table.flags["safety_floor"][rows])
        claims = table.flags["claims_total"][rows]
        if (~np.isnan(claims)).any():
            add("unsupported_rate", table.flags["claims_unsupported"][rows], claims)
        else:
            add("unsupported_rate", table.flags["grounding_unsupported"][rows])
    return names, np.stack(nums, axis=1), np.stack(dens, axis=1)


def _hashable(label: Any) -> Hashable:
    return label if isinstance(label, Hashable) else str(label)


@dataclass(frozen=True)
class _LabelCodes:
    """A table's classification labels as arrays: the labelled rows (sorted) and, per row, codes of its
    predicted label, gold label and declared label set into one vocabulary of (hashable) labels."""

    rows: np.ndarray
    pred: np.ndarray
    gold: np.ndarray
    declared: np.ndarray
    names: list[Hashable]
    sets: list[tuple[int, ...]]

    def find(self, rows: np.ndarray) -> np.ndarray:
        """Positions in :attr:`rows` of the given table rows that carry labels, in their order."""
        at = np.searchsorted(self.rows, rows)
        hit = at < len(self.rows)
        hit[hit] = self.rows[at[hit]] == rows[hit]
        return at[hit]


_LABEL_CODES: dict[int, tuple[Any, _LabelCodes]] = {}


def label_codes(table: ScoreTable) -> _LabelCodes:
    """:class:`_LabelCodes` of ``table.labels``, made once per labels mapping (folds share the table's)."""
    cached = _LABEL_CODES.get(id(table.labels))
    if cached is not None and cached[0] is table.labels:
        return cached[1]
    names: dict[Hashable, int] = {}
    sets: dict[tuple[int, ...], int] = {}

    def code(label: Any) -> int:
        return names.setdefault(_hashable(label), len(names))

    labels = table.labels
    if isinstance(labels, LabelColumns):  # already codes: only their vocabularies are re-coded
        value_code = np.array([code(v) for v in labels.label_values] + [0], dtype=np.int64)
        set_code = np.array(
            [sets.setdefault(tuple(code(x) for x in s), len(sets)) for s in labels.label_sets] + [0], dtype=np.int64
        )
        pred, gold = value_code[labels.predicted], value_code[labels.gold]
        codes = _LabelCodes(labels.rows, pred, gold, set_code[labels.declared], list(names), list(sets))
    else:
        rows = np.array(sorted(labels), dtype=np.int64)
        pred, gold, declared = (np.empty(len(rows), dtype=np.int64) for _ in range(3))
        for i, row in enumerate(rows.tolist()):
            predicted, gold_label, declared_set = labels[row]
            pred[i], gold[i] = code(predicted), code(gold_label)
            declared[i] = sets.setdefault(tuple(code(x) for x in declared_set), len(sets))
        codes = _LabelCodes(rows, pred, gold, declared, list(names), list(sets))
    _LABEL_CODES.clear()  # one table at a time: a build reads one
    _LABEL_CODES[id(table.labels)] = (table.labels, codes)
    return codes


def bucket_label_set(table: ScoreTable, rows: np.ndarray) -> list[Hashable]:
    """Sorted union of the gold labels and declared label sets of a classification bucket's rows."""
    codes = label_codes(table)
    at = codes.find(np.asarray(rows, dtype=np.int64))
    used = set(np.unique(codes.gold[at]).tolist())
    for set_code in np.unique(codes.declared[at]).tolist():
        used.update(codes.sets[set_code])
    return sorted((codes.names[c] for c in used), key=str)


def _classification_stats(
    table: ScoreTable, rows: np.ndarray, items: np.ndarray, labels: list[Hashable], rounds: int, seed: int
) -> dict[str, Estimate]:
    """Macro-F1 and accuracy of one cell: eval.macro_f1 for the value, the bucket's resamples for the CI."""
    codes = label_codes(table)
    at = codes.find(np.asarray(rows, dtype=np.int64))
    if not len(at):
        return {}
    rows = codes.rows[at]
    preds = [codes.names[c] for c in codes.pred[at].tolist()]
    golds = [codes.names[c] for c in codes.gold[at].tolist()]
    point = macro_f1(preds, golds, labels)
    correct = sum(p == g for p, g in zip(preds, golds, strict=True))
    index = {label: i for i, label in enumerate(labels)}
    position = np.searchsorted(items, table.item[rows])
    gold_codes, pred_codes = np.full(len(items), -1), np.full(len(items), -1)
    gold_codes[position] = [index[g] for g in golds]
    pred_codes[position] = [index.get(p, -1) for p in preds]
    draws = resampled_macro_f1(gold_codes, pred_codes, len(labels), rounds, seed)
    n = len(rows)
    acc_lo, acc_hi = wilson_interval(correct, n)
    return {
        "macro_f1": Estimate(
            float(point["macro_f1"]),
            hull_with_wilson(point["macro_f1"], n, draws[:, 0]),
            n,
            draws[:, 0].copy(),
            CI_HULL,
        ),
        "accuracy": Estimate(float(point["accuracy"]), (float(acc_lo), float(acc_hi)), n, NO_DRAWS, CI_WILSON),
    }


def bucket_stats(
    table: ScoreTable,
    cell_rows: Sequence[np.ndarray],
    family: str,
    rounds: int,
    seed: int,
    labels: list[Hashable] | None = None,
    draws_of: Sequence[str] = DRAWS_KEPT,
) -> list[dict[str, Estimate]]:
    """Every statistic of every cell of one bucket (cells given as their scored rows).

    The bucket's scored items are resampled together — one index matrix over them, seeded by
    (seed, number of items) — and a cell's resampled statistic is its ratio over the resampled
    items it has (for a cell with every item: the plain bootstrap of its mean). Resampling items
    in lockstep makes the draws of one bucket paired, and every statistic of every cell comes out of
    one matrix product ``counts @ X``. Intervals: one :func:`routing.stats.intervals.ratio_intervals` call over
    every cell's columns, each bounded by the largest value any cell of the bucket has in that
    statistic (at least 1). Draws are kept for the statistics in ``draws_of`` (when none of the ratio
    statistics is among them, none is drawn).
    """
    filled = [rows for rows in cell_rows if len(rows)]
    if not filled:
        return [{} for _ in cell_rows]
    items = np.unique(np.concatenate([table.item[rows] for rows in filled]))
    layout: list[list[str] | None] = []
    cells: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    scale: dict[str, float] = {}
    for rows in cell_rows:
        if not len(rows):
            layout.append(None)
            continue
        names, num, den = _mean_columns(table, rows, family)
        layout.append(names)
        for j, name in enumerate(names):
            scale[name] = max(scale.get(name, 1.0), float(np.max(num[den[:, j] > 0, j], initial=1.0)))
        cells.append((np.searchsorted(items, table.item[rows]), num, den))
    # every cell's columns over the bucket's items, numerators then denominators side by side: the
    # layout the resampled sums read, filled in place (no joined copy of the cells' columns)
    k = sum(num.shape[1] for _, num, _ in cells)
    both = np.zeros((len(items), 2 * k))
    column = 0
    while cells:
        position, num, den = cells.pop(0)
        both[position, column : column + num.shape[1]] = num
        both[position, k + column : k + column + num.shape[1]] = den
        column += num.shape[1]
    all_num, all_den = both[:, :k], both[:, k:]
    drawn = any(name in draws_of for names in layout if names for name in names)
    draws = resampled_ratios_side_by_side(both, rounds, seed) if drawn else None
    lo, hi, methods = ratio_intervals(
        all_num, all_den, np.array([scale[name] for names in layout if names for name in names])
    )
    num_total, den_total, counts = all_num.sum(axis=0), all_den.sum(axis=0), (all_den > 0).sum(axis=0)
    out, column = [], 0
    for rows, names in zip(cell_rows, layout, strict=True):
        if names is None:
            out.append({})
            continue
        stats = {}
        for j, name in enumerate(names, start=column):
            point = num_total[j] / den_total[j] if den_total[j] > 0 else np.nan
            kept = (
                draws[:, j].copy() if draws is not None and name in draws_of else NO_DRAWS
            )  # a view would keep the whole matrix
            stats[name] = Estimate(float(point), (float(lo[j]), float(hi[j])), int(counts[j]), kept, methods[j])
        column += len(names)
        if labels:
            stats.update(_classification_stats(table, rows, items, labels, rounds, seed))
        out.append(stats)
    return out


def build_buckets(
    table: ScoreTable,
    keep: np.ndarray | None = None,
    rounds: int = 1000,
    seed: int = 0,
    draws_of: Sequence[str] = DRAWS_KEPT,
    skip_kinds: Sequence[str] = (),
) -> list[Bucket]:
    """Every bucket of every family. ``keep`` marks the rows allowed into statistics (``--common``);
    infra errors and unscorable rows are counted from the whole table either way. ``draws_of``: the
    statistics whose bootstrap draws the caller reads (see :data:`DRAWS_KEPT`); ``skip_kinds``: bucket
    kinds the caller never reads (the routing validation's rebuilds skip the broad areas)."""
    keep = np.ones(len(table), dtype=bool) if keep is None else keep
    buckets = []
    for family in FAMILIES:
        if family not in table.vocab["family"]:
            continue
        in_family = np.flatnonzero(table.family == table.code("family", family))
        for kind, column in BUCKET_KINDS[family]:
            if kind in skip_kinds:
                continue
            codes = getattr(table, column)[in_family]
            groups: dict[int, list[tuple[int, np.ndarray]]] = {}
            for (code, entrant), local in group_rows([codes, table.entrant[in_family]], order_by=table.item[in_family]):
                groups.setdefault(code, []).append((entrant, in_family[local]))
            for code, members in groups.items():
                buckets.append(
                    _bucket(table, keep, family, kind, table.names(column)[code], members, rounds, seed, draws_of)
                )
    return buckets


def bucket_check(table: ScoreTable, scored: np.ndarray) -> dict[str, Any] | None:
    """The objective check that scored this bucket's rows, and how many of its items the judge
    scored instead (their reference could not run); None when no row carries a check metric."""
    for kind, metric in CHECK_METRICS.items():
        column = table.metrics.get(metric)
        if column is not None and (~np.isnan(column[scored])).any():
            fallback = np.setdiff1d(table.item[scored], table.item[scored[~np.isnan(column[scored])]])
            return {"kind": kind, "metric": metric, "judge_fallback_items": len(fallback)}
    return None


def _mean(values: np.ndarray) -> float:
    """Mean over known values; NaN when any is unknown (a cost with holes is not a cost)."""
    return float(values.mean()) if len(values) and not np.isnan(values).any() else float("nan")


def medians(columns: Sequence[np.ndarray]) -> list[float]:
    """``np.median`` of each column's known values (NaN when none), by one sort each (np.median's own
    per-call work costs more than the sort of a cell's few hundred latencies)."""
    out = []
    for column in columns:
        known = np.sort(column[~np.isnan(column)])
        size = len(known)
        # the middle value, or np.median's mean of the middle pair, in the column's own dtype
        out.append(float((known[(size - 1) // 2] + known[size // 2]) / 2) if size else float("nan"))
    return out


def _bucket(
    table: ScoreTable,
    keep: np.ndarray,
    family: str,
    kind: str,
    name: str,
    members: Sequence[tuple[int, np.ndarray]],
    rounds: int,
    seed: int,
    draws_of: Sequence[str],
) -> Bucket:
    all_rows = np.concatenate([rows for _, rows in members])
    gold_types = tuple(sorted({table.names("gold_type")[c] for c in np.unique(table.gold_type[all_rows])}))
    by_macro_f1 = len(gold_types) == 1 and primary_metric_of(gold_types[0]) == "macro_f1"
    labels = bucket_label_set(table, all_rows[table.status[all_rows] == SCORED]) if by_macro_f1 else None
    classification = bool(labels)  # without recorded labels a classification bucket falls back to mean accuracy
    scored = [rows[(table.status[rows] == SCORED) & keep[rows]] for _, rows in members]
    stats = bucket_stats(table, scored, family, rounds, seed, labels if classification else None, draws_of)
    latencies = medians([table.latency_s[rows] for rows in scored])
    cut = table.flags.get("truncated")  # absent from tables built without flags (benchmarks)
    cells = [
        Cell(
            entrant=table.entrants[entrant],
            n=len(rows_scored),
            infra_errors=int((table.status[rows] == INFRA_ERROR).sum()),
            unscorable=int((table.status[rows] == UNSCORABLE).sum()),
            items=table.item[rows_scored],
            stats=cell_stats,
            values=table.value[rows_scored],
            median_latency_s=latency,
            mean_completion_tokens=_mean(table.completion_tokens[rows_scored]),
            mean_cost=_mean(table.cost[rows_scored]) if table.cost is not None else float("nan"),
            truncated=int((cut[rows_scored] == 1).sum()) if cut is not None else 0,
        )
        for (entrant, rows), rows_scored, cell_stats, latency in zip(members, scored, stats, latencies, strict=True)
    ]
    bucket = Bucket(
        f"{family}/{kind}/{name}",
        family,
        kind,
        name,
        "macro_f1" if classification else "score",
        gold_types,
        len(np.unique(np.concatenate([c.items for c in cells]))),
        (),
        bucket_check(table, all_rows[table.status[all_rows] == SCORED]),
    )
    ordered = sorted(cells, key=lambda c: (-bucket.value_of(c), c.entrant.label))
    return replace(bucket, cells=tuple(ordered))
