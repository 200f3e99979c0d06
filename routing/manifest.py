"""``routing_manifest.yaml``: which model to send each kind of question to, and how sure we are.

Schema (``schema_version: 1``; YAML written with ``yaml.safe_dump``, plain types only)::

    schema_version: 1
    kind: medpool-routing-manifest
    generated_at: ISO-8601 UTC time of the build
    runs: [{run_id, dir, created_at, pool_fingerprint, data_fingerprint}]   # oldest first
    pool_fingerprints: [..]            # distinct values over the runs
    data_fingerprints: [..]
    parameters: {min_n, top_k, floor, common, since, bootstrap, seed, ci_level, lam, hard_n,
                 orchestration_tasks}
    models:                            # per model identity (label = pool name, disambiguated)
      <model>: {name, identity: {name, backend, model, temperature, max_tokens, mode, think},
                judges: [judge keys], answered, infra_errors,
                median_latency_s, median_completion_tokens}     # over answered items
    default: {model, score, method, buckets}       # model for unroutable buckets (null if none)
    orchestrator:
      model: <model> | null            # best composite point estimate
      decisive: bool                   # false when another candidate's CI overlaps the leader's
      tied_top: [<model>]
      candidates: [{model, score, ci: [lo, hi], components: {routing, tool_decision, capability?}}]
      components: [..]; capability_tasks: [..]; method: text
      insufficient_data: bool; reason: text      # when no model qualifies
    buckets:
      <family>/<kind>/<name>:          # e.g. capability/task/MedCOT, specialty/domain/cardiology:cad,
        family, kind, name             #      specialty/system/cardiology, orchestration/skill/routing
        metric: score | macro_f1       # what candidates are ranked by (higher is better, in [0, 1])
        insufficient_data: bool        # true when no model has n >= min_n scored items
        routable: bool                 # false: use `default` (insufficient data, or all below floor)
        reason: text                   # why not routable (only when routable is false)
        decisive: bool                 # tied_top has exactly one model
        tied_top: [<model>]            # every eligible model whose 95% CI overlaps the leader's
        candidates: [{model, judge, n, score, ci: [lo, hi]}]   # eligible, best first, at most top_k
        excluded: [{model, judge, n, score, reason}]           # n < min_n, or score < floor

Eligible: n ≥ min_n and, with ``--floor F``, score ≥ F. Candidates are ranked by the point
estimate; a consumer should treat every model in ``tied_top`` as equally good (e.g. take the
fastest by ``median_latency_s``) — the leader of a tie is not a winner. Families never mix: a
bucket holds one family's items and one metric.

``default``: the model with the highest mean rank points over routable buckets, where an eligible
model ranked r of k in a bucket earns 1 − (r − 1)/(k − 1) (1 when k = 1) and an absent or
ineligible one 0; ties go to the lower median latency, then the name.

``orchestrator``: composite = unweighted mean of routing accuracy (orchestration/skill/routing),
tool-decision accuracy (orchestration/skill/tool_decision) and, when present, the mean score over
the orchestration-like capability tasks (``orchestration_tasks``: tool calling, retrieval, data
operations, task decomposition, pathway planning, collaboration) that every qualifying model ran
with n ≥ min_n. A model qualifies with n ≥ min_n in both orchestration skills. The composite's CI
is the percentile interval of the same mean over the components' bootstrap draws. When a model has
cells under several judges, the cell with the most items is used.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import yaml

from routing.leaderboard import Bucket, Cell
from routing.load import RunInfo
from routing.stats import LEVEL, intervals_overlap, json_number, percentile_ci
from routing.table import INFRA_ERROR, ScoreTable

SCHEMA_VERSION = 1
ORCHESTRATION_TASKS = ("MedCallAPI", "MedRetAPI", "MedDBOps", "MedDecomp", "MedPathPlan", "MedCollab")
ROUTING_BUCKET, TOOL_BUCKET = "orchestration/skill/routing", "orchestration/skill/tool_decision"


def split_eligible(bucket: Bucket, min_n: int, floor: float | None) -> tuple[list[Cell], list[tuple[Cell, str]]]:
    """(eligible cells best first, [(excluded cell, reason)]) — cells without a score are neither."""
    eligible, excluded = [], []
    for cell in bucket.cells:  # already best-first
        if not np.isfinite(bucket.value_of(cell)):
            continue
        if cell.n < min_n:
            excluded.append((cell, f"n={cell.n} < min_n={min_n}"))
        elif floor is not None and bucket.value_of(cell) < floor:
            excluded.append((cell, f"score below floor {floor}"))
        else:
            eligible.append(cell)
    return eligible, excluded


def bucket_route(bucket: Bucket, min_n: int, top_k: int, floor: float | None) -> dict[str, Any]:
    """The manifest entry of one bucket (see the module docstring)."""
    ranked, excluded = split_eligible(bucket, min_n, floor)
    insufficient = not any(c.n >= min_n and np.isfinite(bucket.value_of(c)) for c in bucket.cells)
    entry: dict[str, Any] = {"family": bucket.family, "kind": bucket.kind, "name": bucket.name, "metric": bucket.primary,
                             "insufficient_data": insufficient, "routable": bool(ranked)}  # fmt: skip
    if insufficient:
        most = max((c.n for c in bucket.cells), default=0)
        entry["reason"] = f"no model has n >= {min_n} scored items (most: {most})"
    elif not ranked:
        entry["reason"] = f"no model with n >= {min_n} reaches the floor {floor}"
    leader_ci = bucket.ci_of(ranked[0]) if ranked else None
    tied = [c for c in ranked if intervals_overlap(bucket.ci_of(c), leader_ci)]
    entry["tied_top"] = list(dict.fromkeys(c.entrant.model_label for c in tied))
    entry["decisive"] = len(entry["tied_top"]) == 1
    entry["candidates"] = [_candidate(bucket, c) for c in ranked[:top_k]]
    entry["excluded"] = [{**_candidate(bucket, c), "reason": reason} for c, reason in excluded]
    return entry


def _candidate(bucket: Bucket, cell: Cell) -> dict[str, Any]:
    lo, hi = bucket.ci_of(cell)
    return {"model": cell.entrant.model_label, "judge": cell.entrant.judge_key, "n": cell.n,
            "score": json_number(bucket.value_of(cell)), "ci": [json_number(lo), json_number(hi)]}  # fmt: skip


def model_profiles(table: ScoreTable) -> dict[str, dict[str, Any]]:
    """Per model identity: identity, judges, answered / infra items, median latency and tokens."""
    profiles: dict[str, dict[str, Any]] = {}
    for model_label in sorted({e.model_label for e in table.entrants}):
        members = [i for i, e in enumerate(table.entrants) if e.model_label == model_label]
        rows = np.flatnonzero(np.isin(table.entrant, members))
        _, first = np.unique(table.item[rows], return_index=True)  # one answer per item, whatever the judge
        rows = rows[first]
        answered = rows[table.status[rows] != INFRA_ERROR]
        latency, tokens = table.latency_s[answered], table.completion_tokens[answered]
        entrant = table.entrants[members[0]]
        profiles[model_label] = {
            "name": entrant.model.name, "identity": entrant.model.as_dict(),
            "judges": sorted({table.entrants[i].judge_key for i in members if table.entrants[i].judge_key}),
            "answered": len(answered), "infra_errors": int(len(rows) - len(answered)),
            "median_latency_s": json_number(np.median(latency[~np.isnan(latency)])) if (~np.isnan(latency)).any() else None,
            "median_completion_tokens": json_number(np.median(tokens[~np.isnan(tokens)])) if (~np.isnan(tokens)).any() else None,
        }  # fmt: skip
    return profiles


def default_model(buckets: Sequence[Bucket], profiles: dict[str, dict[str, Any]], min_n: int, floor: float | None) -> dict[str, Any]:
    """The fallback for unroutable buckets: highest mean rank points (see the module docstring)."""
    method = "highest mean rank points over routable buckets: rank r of k eligible earns 1 - (r-1)/(k-1)"
    points = {model: 0.0 for model in profiles}
    routable = 0
    for bucket in buckets:
        ranked = list(dict.fromkeys(c.entrant.model_label for c in split_eligible(bucket, min_n, floor)[0]))
        routable += bool(ranked)
        for r, model in enumerate(ranked):
            points[model] += 1.0 if len(ranked) == 1 else 1.0 - r / (len(ranked) - 1)
    if not routable:
        return {"model": None, "score": None, "method": method, "buckets": 0, "reason": "no routable bucket"}

    def order(model: str) -> tuple[float, float, str]:
        latency = profiles[model]["median_latency_s"]
        return (-points[model], latency if latency is not None else float("inf"), model)

    best = min(points, key=order)
    return {"model": best, "score": json_number(points[best] / routable), "method": method, "buckets": routable}


def orchestrator(buckets: Sequence[Bucket], min_n: int, tasks: Sequence[str]) -> dict[str, Any]:
    by_id = {b.id: b for b in buckets}
    method = ("mean of routing accuracy, tool-decision accuracy and (when present) the mean score over the "
              "orchestration-like capability tasks every qualifying model ran; CI from the components' draws")  # fmt: skip

    def cells(bucket_id: str) -> dict[str, Cell]:
        out: dict[str, Cell] = {}
        bucket = by_id.get(bucket_id)
        for cell in bucket.cells if bucket else ():
            best = out.get(cell.entrant.model_label)
            if cell.n >= min_n and bucket.primary in cell.stats and (best is None or cell.n > best.n):
                out[cell.entrant.model_label] = cell
        return out

    routing, tool = cells(ROUTING_BUCKET), cells(TOOL_BUCKET)
    models = sorted(set(routing) & set(tool))
    base = {"method": method, "components": ["routing", "tool_decision"], "capability_tasks": []}
    if not models:
        return {**base, "model": None, "decisive": False, "tied_top": [], "candidates": [], "insufficient_data": True,
                "reason": f"no model has n >= {min_n} in both {ROUTING_BUCKET} and {TOOL_BUCKET}"}  # fmt: skip
    capability = {t: cells(f"capability/task/{t}") for t in tasks}
    common = [t for t in tasks if capability[t] and all(m in capability[t] for m in models)]
    if common:
        base["components"].append("capability")
        base["capability_tasks"] = common
    candidates = []
    for model in models:
        parts = {"routing": routing[model].stats["score"], "tool_decision": tool[model].stats["score"]}
        draws = [parts["routing"].draws, parts["tool_decision"].draws]
        values = [parts["routing"].value, parts["tool_decision"].value]
        if common:
            cap = [capability[t][model].stats["score"] for t in common]
            values.append(float(np.mean([c.value for c in cap])))
            draws.append(np.mean([c.draws for c in cap], axis=0))
        lo, hi = percentile_ci(np.mean(draws, axis=0)[:, None], LEVEL)[:, 0]
        components = {"routing": json_number(values[0]), "tool_decision": json_number(values[1])}
        if common:
            components["capability"] = json_number(values[2])
        candidates.append({"model": model, "score": float(np.mean(values)), "ci": (float(lo), float(hi)), "components": components})
    candidates.sort(key=lambda c: (-c["score"], c["model"]))
    tied = [c["model"] for c in candidates if intervals_overlap(c["ci"], candidates[0]["ci"])]
    for c in candidates:
        c["score"], c["ci"] = json_number(c["score"]), [json_number(c["ci"][0]), json_number(c["ci"][1])]
    return {**base, "model": candidates[0]["model"], "decisive": len(tied) == 1, "tied_top": tied,
            "candidates": candidates, "insufficient_data": False}  # fmt: skip


def build_manifest(table: ScoreTable, buckets: Sequence[Bucket], runs: Sequence[RunInfo], parameters: dict[str, Any],
                   generated_at: str | None = None) -> dict[str, Any]:  # fmt: skip
    min_n, top_k, floor = parameters["min_n"], parameters["top_k"], parameters.get("floor")
    routes = {b.id: bucket_route(b, min_n, top_k, floor) for b in buckets}
    profiles = model_profiles(table)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "medpool-routing-manifest",
        "generated_at": generated_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "runs": [{"run_id": r.run_id, "dir": r.dir, "created_at": r.created_at, "pool_fingerprint": r.pool_fingerprint,
                  "data_fingerprint": r.data_fingerprint} for r in runs],
        "pool_fingerprints": sorted({r.pool_fingerprint for r in runs if r.pool_fingerprint}),
        "data_fingerprints": sorted({r.data_fingerprint for r in runs if r.data_fingerprint}),
        "parameters": dict(parameters),
        "models": profiles,
        "default": default_model(buckets, profiles, min_n, floor),
        "orchestrator": orchestrator(buckets, min_n, parameters.get("orchestration_tasks", ORCHESTRATION_TASKS)),
        "buckets": routes,
    }  # fmt: skip


def dump_yaml(document: dict[str, Any]) -> str:
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=120)
