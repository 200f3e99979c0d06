"""Proof that routing pays: the manifest's routing, cross-validated, against the best single model and the oracle.

The items are split into k folds (seeded; stratified by routing bucket: each bucket's items are dealt
round-robin over the folds after a seeded shuffle, so a bucket with at least k items is in every
fold). For fold f the routing is rebuilt from the other k − 1 folds by the code that builds the
manifest (``routing.boards.leaderboard.build_buckets``, then ``routing.decide.manifest``'s ``bucket_route``,
``family_decisions``, ``default_model`` and ``serve_unroutable``, on the table with the held-out
items' rows left out of every statistic), and each held-out item is scored three ways, per family
(families never mix):

- **routed**: the score on that item of the ``model`` the rebuilt manifest gives the item's bucket
  (the family's finest bucket: task, specialty domain or orchestration skill) — its own pick
  when it is routable, else the pick of what serves it (``served_by``: the specialty system, the
  family, or ``default``);
- **best single**: the score of the one model with the highest mean score over the family's
  training items (among models with n ≥ min_n there; ties: more items, then the name);
- **oracle**: the best score any model got on that item.

A model scored by several judges is represented by the judge with the most scored items in the
family (the manifest's orchestrator rule), so one item has one score per model. The per-item score
is ``value``: for classification buckets, ranked by macro-F1, this is per-item accuracy.

Over the *evaluated* items — both the routed and the best single model have a score; the rest are
counted as missing by reason (no route, routed model unscored, best single unscored: infra errors or
unscorable answers) — the family's R (routed), B (best single) and O (oracle) are item means, and

    lift = R − B            gap_recovered = (R − B) / (O − B)

``gap_recovered`` is RouteLLM's "performance gap recovered" at the manifest's one operating point:
1 = routing does as well as the per-item oracle, 0 = no better than the best single model, < 0 =
worse. It is null when O − B < GAP_EPSILON (no gap to recover). CIs are percentile bootstrap over
the evaluated items (seeded, :mod:`routing.stats.intervals`), the same resamples for R, B, O, lift and the
ratio (resamples where O − B < GAP_EPSILON are left out of the ratio's interval).

Every routing decision is made on (k − 1)/k of the data, so the estimate is slightly pessimistic
for the manifest built on all of it (more buckets fall below min_n). Rebuilding costs k builds of
the leaderboards and bucket decisions, so those builds compute only what decides a route: judge
sub-metrics and audit rates, the orchestrator, family / default decisions no bucket falls back
to, and the broad-area rollups (no held-out item is routed by one) are left out (a test checks
every other route is the one ``build_manifest`` gives), and the bucket bootstrap — which feeds
only the macro-F1 intervals and the paired bootstrap tests; the other intervals and tests are
closed-form — draws min(bootstrap, FOLD_ROUNDS) resamples.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from eval.items.scores import FAMILIES
from routing.boards.leaderboard import BUCKET_KINDS, build_buckets
from routing.decide.manifest import (
    ALPHA,
    bucket_route,
    default_model,
    family_decisions,
    model_profiles,
    serve_unroutable,
    undecided,
)
from routing.load.table import SCORED, ScoreTable
from routing.stats.intervals import (
    LEVEL,
    json_number,
    percentile_ci,
    resampled_ratios,
)

DEFAULT_K = 5
FOLD_ROUNDS = 200  # bootstrap resamples of each rebuilt leaderboard (at most the build's own)
FOLD_DRAWS = ("macro_f1",)  # the draws a route reads: classification buckets' paired bootstrap (no orchestrator here)
# Bucket kinds no held-out item is routed by: a broad area is no item's finest bucket and no domain's parent.
FOLD_SKIPPED_KINDS = ("broad_area",)
GAP_EPSILON = 1e-3  # O − B below this (a tenth of a point on the 0–1 scale): nothing to recover
ROUTE_SOURCES = ("bucket", "parent", "family", "default", "none")  # what served a held-out item's bucket
METHOD = (
    "k-fold cross-validation over items (seeded, stratified by routing bucket): the manifest is rebuilt on k-1 folds "
    "and each held-out item is sent to the model it gives the item's bucket (its own pick, or its served_by "
    "fallback's) and scored with that model's score on the item; best single = the highest mean over the family's "
    "training items (n >= min_n); oracle = the best score any model got on the item; gap_recovered = "
    "(routed - best single) / (oracle - best single); CIs: percentile bootstrap over evaluated items; rebuilt "
    f"manifests resample buckets min(bootstrap, {FOLD_ROUNDS}) times"
)

Decide = Callable[[np.ndarray], Mapping[str, Any]]  # rows allowed into statistics -> a manifest


@dataclass(frozen=True)
class FamilyScores:
    """One family's items as a matrix: per item its routing bucket and every model's score."""

    family: str
    items: np.ndarray  # item codes (into table.items), sorted
    buckets: tuple[str, ...]  # routing bucket ids (family/kind/name)
    bucket: np.ndarray  # per item: index into buckets
    models: tuple[str, ...]  # model labels, sorted
    scores: np.ndarray  # items × models, NaN where the model has no score on the item


def family_scores(table: ScoreTable, keep: np.ndarray) -> list[FamilyScores]:
    """Per family present, the item × model score matrix over scored rows kept by ``keep``."""
    scored = (table.status == SCORED) & keep
    out = []
    for family in FAMILIES:
        if family not in table.vocab["family"]:
            continue
        rows = np.flatnonzero(table.family == table.code("family", family))
        items, first = np.unique(table.item[rows], return_index=True)
        kind, column = BUCKET_KINDS[family][0]
        bucket_codes, bucket = np.unique(getattr(table, column)[rows[first]], return_inverse=True)
        names = table.names(column)
        present = np.unique(table.entrant[rows])
        counts = np.bincount(table.entrant[rows[scored[rows]]], minlength=len(table.entrants))
        chosen: dict[str, int] = {}  # model label -> the entrant (judge) with the most scored items
        for entrant in present:
            label = table.entrants[entrant].model_label
            if label not in chosen or counts[entrant] > counts[chosen[label]]:
                chosen[label] = int(entrant)
        models = tuple(sorted(chosen))
        column_of = np.full(len(table.entrants), -1)
        column_of[[chosen[m] for m in models]] = np.arange(len(models))
        use = rows[scored[rows] & (column_of[table.entrant[rows]] >= 0)]
        scores = np.full((len(items), len(models)), np.nan)
        scores[np.searchsorted(items, table.item[use]), column_of[table.entrant[use]]] = table.value[use]
        out.append(
            FamilyScores(
                family,
                items,
                tuple(f"{family}/{kind}/{names[c]}" for c in bucket_codes),
                bucket.astype(np.int64),
                models,
                scores,
            )
        )
    return out


def assign_folds(strata: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Fold (0..k−1) per observation: a seeded shuffle, grouped by stratum, dealt round-robin.

    The deal continues across strata, so folds differ in size by at most one and a stratum of m
    items puts ⌊m/k⌋ or ⌈m/k⌉ into each fold.
    """
    strata = np.asarray(strata)
    order = np.random.default_rng([seed, len(strata), k]).permutation(len(strata))
    order = order[np.argsort(strata[order], kind="stable")]
    folds = np.empty(len(strata), dtype=np.int64)
    folds[order] = np.arange(len(strata)) % k
    return folds


def routed_model(manifest: Mapping[str, Any], bucket_id: str) -> tuple[str | None, str]:
    """(model, source) a consumer of ``manifest`` picks for a question of ``bucket_id``: the bucket's
    ``model``, and whether the bucket itself, a parent bucket, the family or ``default`` served it
    (its ``served_by``). A bucket the manifest does not list is served by ``default``."""
    entry = manifest["buckets"].get(bucket_id)
    if entry is None:
        model, served_by = (manifest.get("default") or {}).get("model"), "default"
    else:
        model, served_by = entry.get("model"), entry.get("served_by")
    if model is None:
        return None, "none"
    if served_by == bucket_id:
        return model, "bucket"
    if served_by == "default":
        return model, "default"
    return model, "parent" if "/" in str(served_by) else "family"


def best_single(train_scores: np.ndarray, min_n: int) -> int:
    """Column with the highest mean over its scored training items (n ≥ min_n if any model has it); −1 if none."""
    n = (~np.isnan(train_scores)).sum(axis=0)
    eligible = n >= min_n if (n >= min_n).any() else n > 0
    if not eligible.any():
        return -1
    mean = np.where(eligible, np.nansum(train_scores, axis=0) / np.maximum(n, 1), -np.inf)
    return int(np.lexsort((np.arange(len(n)), -n, -mean))[0])


def oracle_scores(scores: np.ndarray) -> np.ndarray:
    """Per row the best score of any column; NaN when no column has one."""
    best = np.max(np.where(np.isnan(scores), -np.inf, scores), axis=1, initial=-np.inf)
    return np.where(np.isfinite(best), best, np.nan)


def paired_summary(
    routed: np.ndarray, single: np.ndarray, oracle: np.ndarray, rounds: int, seed: int
) -> dict[str, Any]:
    """Means, lift and gap recovered, with bootstrap CIs, over items where all three are present."""
    both = ~np.isnan(routed) & ~np.isnan(single) & ~np.isnan(oracle)
    x = np.stack([routed[both], single[both], oracle[both]], axis=1)
    n = len(x)
    if not n:
        nothing = {"value": None, "ci": [None, None]}
        return {
            "evaluated": 0,
            "routed": nothing,
            "best_single": nothing,
            "oracle": nothing,
            "lift": nothing,
            "gap_recovered": {
                **nothing,
                "reason": "no held-out item has a score from both the routed and the best single model",
            },
        }
    point = x.mean(axis=0)
    draws = resampled_ratios(x, np.ones_like(x), n, rounds, seed)
    gap = draws[:, 2] - draws[:, 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        recovered = np.where(gap >= GAP_EPSILON, (draws[:, 0] - draws[:, 1]) / gap, np.nan)
    columns = np.column_stack([draws, draws[:, 0] - draws[:, 1], recovered])
    with warnings.catch_warnings():  # every resample without a gap: an all-NaN column, reported as null
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = percentile_ci(columns, LEVEL)

    def stat(value: float, j: int) -> dict[str, Any]:
        return {"value": json_number(value), "ci": [json_number(lo[j]), json_number(hi[j])]}

    out = {
        "evaluated": n,
        "routed": stat(point[0], 0),
        "best_single": stat(point[1], 1),
        "oracle": stat(point[2], 2),
        "lift": stat(point[0] - point[1], 3),
    }
    if point[2] - point[1] < GAP_EPSILON:
        out["gap_recovered"] = {
            "value": None,
            "ci": [None, None],
            "reason": f"oracle - best single = {point[2] - point[1]:.4f} < {GAP_EPSILON}: no gap to recover",
        }
    else:
        out["gap_recovered"] = stat((point[0] - point[1]) / (point[2] - point[1]), 4)
    return out


def cross_validate(
    table: ScoreTable,
    keep: np.ndarray | None,
    decide: Decide,
    *,
    k: int = DEFAULT_K,
    seed: int = 0,
    rounds: int = 1000,
    min_n: int = 5,
) -> dict[str, Any]:
    """The manifest's ``validation`` block (see the module docstring). ``decide(rows)`` builds a manifest
    from the rows marked in ``rows``; :func:`manifest_decider` gives the one ``routing.build`` uses."""
    if k < 2:
        raise ValueError(f"k must be >= 2, got {k}")
    keep = np.ones(len(table), dtype=bool) if keep is None else keep
    families = family_scores(table, keep)
    strata = np.full(len(table.items), -1, dtype=np.int64)
    offset = 0
    for fam in families:
        strata[fam.items] = offset + fam.bucket
        offset += len(fam.buckets)
    folds = assign_folds(strata, k, seed)
    routed_col = {fam.family: np.full(len(fam.items), -1) for fam in families}
    source = {fam.family: np.full(len(fam.items), ROUTE_SOURCES.index("none")) for fam in families}
    single_col = {fam.family: np.full(len(fam.items), -1) for fam in families}
    single_folds: dict[str, dict[str, int]] = {fam.family: {} for fam in families}
    for fold in range(k):
        held = folds == fold
        if not held.any():
            continue
        manifest = decide(keep & ~held[table.item])
        for fam in families:
            test = held[fam.items]
            if not test.any():
                continue
            routes = [routed_model(manifest, bucket_id) for bucket_id in fam.buckets]
            to_column = np.array([fam.models.index(m) if m in fam.models else -1 for m, _ in routes])
            via = np.array([ROUTE_SOURCES.index(s if m is not None else "none") for m, s in routes])
            routed_col[fam.family][test] = to_column[fam.bucket[test]]
            source[fam.family][test] = via[fam.bucket[test]]
            best = best_single(fam.scores[~test], min_n)
            single_col[fam.family][test] = best
            if best >= 0:
                per = single_folds[fam.family]
                per[fam.models[best]] = per.get(fam.models[best], 0) + 1
    out_families = {}
    for fam in families:
        rows = np.arange(len(fam.items))
        padded = np.column_stack([fam.scores, np.full(len(fam.items), np.nan)])  # column −1: no model
        routed = padded[rows, routed_col[fam.family]]
        single = padded[rows, single_col[fam.family]]
        routed_to = [fam.models[c] for c in routed_col[fam.family] if c >= 0]
        entry = {
            "items": len(fam.items),
            "folds": len(np.unique(folds[fam.items])),
            **paired_summary(routed, single, oracle_scores(fam.scores), rounds, seed),
            "missing": {
                "no_route": int((routed_col[fam.family] < 0).sum()),
                "routed_unscored": int(((routed_col[fam.family] >= 0) & np.isnan(routed)).sum()),
                "best_single_unscored": int(((single_col[fam.family] >= 0) & np.isnan(single)).sum()),
            },
            "best_single_models": dict(sorted(single_folds[fam.family].items())),
            "routed_to": {m: routed_to.count(m) for m in sorted(set(routed_to))},
            "route_sources": {
                s: int((source[fam.family] == i).sum())
                for i, s in enumerate(ROUTE_SOURCES)
                if (source[fam.family] == i).any()
            },
        }
        out_families[fam.family] = entry
    return {
        "method": METHOD,
        "k": k,
        "seed": seed,
        "bootstrap": rounds,
        "ci_level": LEVEL,
        "gap_epsilon": GAP_EPSILON,
        "families": out_families,
    }


def routing_table(table: ScoreTable) -> ScoreTable:
    """The table without the columns no routing decision reads (pass/fail, judge sub-metrics, specialty
    audit flags: routes are decided on each bucket's primary statistic), so the k rebuilt leaderboards
    compute only what decides a route."""
    blank = np.broadcast_to(np.nan, len(table))  # read-only, no memory per row
    return replace(table, passed=blank, metrics={}, flags={name: blank for name in table.flags})


def manifest_decider(
    table: ScoreTable, parameters: Mapping[str, Any], rounds: int, seed: int, *, every_decision: bool = False
) -> Decide:
    """``decide(rows)`` = the routing part of the manifest ``routing.build`` would write if only ``rows``
    were in the runs: ``buckets`` (each with its ``model`` and ``served_by``), ``families`` and
    ``default``, composed as :func:`routing.decide.manifest.build_manifest` composes them, minus what no
    route reads (the orchestrator; the decisions of families, and ``default``, when no bucket falls
    back to them; the broad-area buckets, :data:`FOLD_SKIPPED_KINDS`). Model profiles (median
    latency, the tie rule's input) come from every row, as in the build. Buckets are resampled
    min(rounds, FOLD_ROUNDS) times. ``every_decision``: every family decision and ``default`` are
    made (a served question can climb to any of them)."""
    slim = routing_table(table)
    rounds = min(rounds, FOLD_ROUNDS)
    min_n, top_k, floor = parameters["min_n"], parameters["top_k"], parameters.get("floor")
    alpha = parameters.get("alpha", ALPHA)
    profiles = model_profiles(table)

    def decide(rows: np.ndarray) -> Mapping[str, Any]:
        buckets = build_buckets(
            slim, rows, rounds=rounds, seed=seed, draws_of=FOLD_DRAWS, skip_kinds=FOLD_SKIPPED_KINDS
        )
        routes = {b.id: bucket_route(b, min_n, top_k, floor, alpha) for b in buckets}
        unserved = {
            entry["family"] for entry in routes.values() if every_decision or not entry["routable"] or undecided(entry)
        }
        families = family_decisions([b for b in buckets if b.family in unserved], profiles, min_n, alpha)
        default = default_model(buckets, profiles, min_n, alpha) if unserved else {}
        serve_unroutable(routes, families, default)
        return {"buckets": routes, "families": families, "default": default}

    return decide
