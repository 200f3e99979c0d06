"""``routing_manifest.yaml``: which model to send each kind of question to, and how sure we are.

Schema (``schema_version: 2``; YAML written with ``yaml.safe_dump``, plain types only)::

    schema_version: 2
    kind: medpool-routing-manifest
    generated_at: ISO-8601 UTC time of the build
    runs: [{run_id, dir, created_at, pool_fingerprint, data_fingerprint}]   # oldest first
    pool_fingerprints: [..]; data_fingerprints: [..]
    parameters: {min_n, top_k, floor, alpha, component_floor, common, since, bootstrap, seed, ci_level, ...}
    models:                            # per model identity (label = pool name, disambiguated)
      <model>: {name, identity: {...}, judges: [judge keys], answered, infra_errors,
                median_latency_s, median_completion_tokens,     # over answered items
                mean_cost_per_item}            # at the pool file's prices; null when unpriced
    default:    <decision over every leaf bucket's items>       # for questions no bucket or parent serves
    families:   {<family>: <decision over the family's leaf buckets' items>}
    orchestrator: <decision over the composite>, plus components, capability_tasks, component_floor,
                  not_nominated: [{model, score, components, weakest, reason}]
    buckets:
      <family>/<kind>/<name>:          # e.g. capability/task/MedCOT, specialty/domain/cardiology:cad
        family, kind, name, metric     # metric: score | macro_f1 (higher is better, in [0, 1])
        insufficient_data: bool        # no model has n >= min_n scored items
        routable: bool                 # false: served by a parent (see served_by)
        reason: text                   # why not routable (only when routable is false)
        served_by: <id>                # this bucket, its parent (specialty/system/..), its family, or default
        model: <model> | null          # send this bucket's questions here (the served_by decision's pick)
        decisive: bool                 # the leader is significantly better than every other eligible model
        chosen_by: paired_test | tie_rule | parent_tie_break | only_candidate | fallback | none
                   | judged_battles   # the scores tied; the pairwise stage's judged battles decided (model, decisive)
        judged: {battles: judged, n_battles, leader, tied_top, decisive,
                 judges: [{judge, pairs, consistent, verdicts, first_position}]}  # only with judged battles
        score_decisive: false; decided_by: judged battles   # only when chosen_by is judged_battles
        method: mcnemar_midp | paired_t | paired_bootstrap | null   # the paired test
        alpha: 0.05; correction: holm
        tie_rule: lower_bound, score, latency, items, hash   # the order of tied_top after its leader
        leader: <model>                # highest lower confidence bound (the tests' reference)
        tied_top: [<model>]            # leader, then every eligible model not significantly worse in tie-rule order
        candidates: [{model, judge, n, score, ci: [lo, hi], ci_method, median_latency_s,
                      mean_completion_tokens, mean_cost, verdict: leader|tied|worse,
                      n_paired, p_value, p_holm, reason}]   # tied_top, then the rest; at least top_k
        excluded: [{model, judge, n, score, ci, ci_method, reason}]   # n < min_n, or score < floor

A *decision* block (``default``, each of ``families``, ``orchestrator``) has ``model`` (the pick),
``decisive``, ``method`` (how the pick was made: ``paired_test`` when the leader is significantly
better than every other candidate, else ``tie_rule``; ``only_candidate``; ``none`` when nobody
qualifies, with ``reason``), ``test``, ``alpha``, ``correction``, ``tie_rule``, ``leader``,
``tied_top`` and ``candidates`` as above, and ``description``.

Every decision follows :mod:`routing.decide.decision`: leader = highest lower 95% bound; every other
candidate is tested against it on the items both answered (McNemar mid-p for pass/fail, paired
t-test otherwise, paired bootstrap for macro-F1 and the composite), two-sided, Holm-adjusted
over the comparisons in the decision; fewer than ``min_n`` shared items → tied. ``tied_top`` is the
leader, then the other tied candidates in tie-rule order (``tie_rule``: higher lower bound, then
higher score, then lower median latency, then more items, then a sha256 of the decision id and the
identity — quality first, never the name); its first entry, the leader, is ``model``. Eligible in a
bucket: n ≥ min_n and, with ``--floor F``, score ≥ F.

``default`` and ``families``: every scored item of the leaf buckets counted once (specialty
domains, not their system or broad-area rollups; a model's cell with the most items when several
judges scored it); a model needs ≥ min_n items; its score is its mean over its items. It is a
winner only on significant evidence, otherwise ``method: tie_rule`` says no model is shown better
(the pick is then the leader, the tied model with the highest lower bound).

Unroutable buckets fall back domain → system → family → default: ``served_by`` names the first
of those with a model. A broad-area bucket (``specialty/broad_area/内科``, ``…/精神科``,
:mod:`eval.items.broad_areas`) is routed like any bucket — for a caller who knows a question's area but
not its domain — and falls back to its family; it is not in a domain's chain, since one system can
belong to several areas (substance use is asked by internists and psychiatrists alike).

``orchestrator``: composite = unweighted mean of routing accuracy (orchestration/skill/routing),
tool-decision accuracy (orchestration/skill/tool_decision) and, when present, the mean score over
the orchestration-like capability tasks (``orchestration_tasks``) every qualifying model ran with
n ≥ min_n. A model qualifies with n ≥ min_n in both skills, and is nominated only when every
component reaches ``component_floor`` (default 0.5): a composite must not hide a failing part.
Each candidate shows its ``weakest`` component. The composite's interval is the mean of the
components' bounds (what it would be if their errors moved together: conservative); the tests use
the paired bootstrap of the composite difference.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np
import yaml

from routing.boards.leaderboard import Bucket, Cell
from routing.decide.decision import LEADER_RULE, TIE_RULE, TIE_RULE_KEYS, Contestant, Decision, Verdict, decide
from routing.load.runs import RunInfo
from routing.load.table import INFRA_ERROR, ScoreTable
from routing.stats.intervals import json_number, ratio_intervals

SCHEMA_VERSION = 2
ALPHA = 0.05
COMPONENT_FLOOR = 0.5
ORCHESTRATION_TASKS = ("MedCallAPI", "MedRetAPI", "MedDBOps", "MedDecomp", "MedPathPlan", "MedCollab")
ROUTING_BUCKET, TOOL_BUCKET = "orchestration/skill/routing", "orchestration/skill/tool_decision"
# Bucket kinds that re-count items of other buckets (specialty system and broad area), narrowest first.
ROLLUP_KINDS = ("system", "broad_area")


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


def _entrant_key(cell: Cell) -> str:
    return f"{cell.entrant.model.key}|{cell.entrant.judge_key or ''}"


def cell_contestant(bucket: Bucket, cell: Cell) -> Contestant:
    est = cell.stats[bucket.primary]
    return Contestant(
        label=cell.entrant.model_label,
        key=_entrant_key(cell),
        score=est.value,
        ci=est.ci,
        n=cell.n,
        items=cell.items,
        values=cell.values,
        latency=cell.median_latency_s,
        draws=est.draws,
    )


def p_number(p: float | None) -> float | None:
    """A p-value with 3 significant figures (6 decimals would print 1e-9 as 0.0)."""
    return None if p is None or not np.isfinite(p) else float(f"{p:.3g}")


def _verdict_json(verdict: Verdict) -> dict[str, Any]:
    return {
        "verdict": verdict.verdict,
        "n_paired": verdict.n_paired,
        "p_value": p_number(verdict.p_value),
        "p_holm": p_number(verdict.p_holm),
        "reason": verdict.reason or None,
    }


def _decision_fields(decision: Decision) -> dict[str, Any]:
    leader = decision.leader
    return {
        "decisive": decision.decisive,
        "leader": leader.label if leader else None,
        "tied_top": list(dict.fromkeys(v.contestant.label for v in decision.tied_top)),
        "alpha": decision.alpha,
        "correction": "holm",
        "tie_rule": TIE_RULE_KEYS,
    }


def bucket_route(bucket: Bucket, min_n: int, top_k: int, floor: float | None, alpha: float = ALPHA) -> dict[str, Any]:
    """The manifest entry of one bucket (see the module docstring); ``served_by`` is this bucket or,
    when it is not routable, filled in by :func:`build_manifest`."""
    ranked, excluded = split_eligible(bucket, min_n, floor)
    insufficient = not any(c.n >= min_n and np.isfinite(bucket.value_of(c)) for c in bucket.cells)
    entry: dict[str, Any] = {
        "family": bucket.family,
        "kind": bucket.kind,
        "name": bucket.name,
        "metric": bucket.primary,
        "insufficient_data": insufficient,
        "routable": bool(ranked),
    }
    if insufficient:
        most = max((c.n for c in bucket.cells), default=0)
        entry["reason"] = f"no model has n >= {min_n} scored items (most: {most})"
    elif not ranked:
        entry["reason"] = f"no model with n >= {min_n} reaches the floor {floor}"
    cell_of = {_entrant_key(c): c for c in ranked}
    decision = decide(
        [cell_contestant(bucket, c) for c in ranked], alpha, min_n, bucket.id, bootstrap=bucket.primary != "score"
    )
    pick = decision.pick
    entry.update(
        served_by=bucket.id if ranked else None,
        model=pick.label if pick else None,
        **_decision_fields(decision),
        chosen_by=decision.chosen_by,
        method=decision.test,
    )
    shown = max(top_k, len(decision.tied_top))
    entry["candidates"] = [
        {**_candidate(bucket, cell_of[v.contestant.key]), **_verdict_json(v)} for v in decision.verdicts[:shown]
    ]
    entry["excluded"] = [{**_candidate(bucket, c), "reason": reason} for c, reason in excluded]
    return entry


def _candidate(bucket: Bucket, cell: Cell) -> dict[str, Any]:
    est = cell.stats[bucket.primary]
    return {
        "model": cell.entrant.model_label,
        "judge": cell.entrant.judge_key,
        "n": cell.n,
        "score": json_number(bucket.value_of(cell)),
        "ci": [json_number(est.ci[0]), json_number(est.ci[1])],
        "ci_method": est.method,
        "median_latency_s": json_number(cell.median_latency_s),
        "mean_completion_tokens": json_number(cell.mean_completion_tokens),
        "mean_cost": json_number(cell.mean_cost),
    }


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
        cost = table.cost[answered] if table.cost is not None else np.full(len(answered), np.nan)
        entrant = table.entrants[members[0]]
        profiles[model_label] = {
            "name": entrant.model.name,
            "identity": entrant.model.as_dict(),
            "judges": sorted({table.entrants[i].judge_key for i in members if table.entrants[i].judge_key}),
            "answered": len(answered),
            "infra_errors": int(len(rows) - len(answered)),
            "median_latency_s": json_number(np.median(latency[~np.isnan(latency)]))
            if (~np.isnan(latency)).any()
            else None,
            "median_completion_tokens": json_number(np.median(tokens[~np.isnan(tokens)]))
            if (~np.isnan(tokens)).any()
            else None,
            "mean_cost_per_item": json_number(cost.mean()) if len(cost) and not np.isnan(cost).any() else None,
        }
    return profiles


def _latency(profiles: Mapping[str, Mapping[str, Any]], model: str) -> float:
    value = profiles.get(model, {}).get("median_latency_s")
    return float("nan") if value is None else float(value)


def _largest_cells(bucket: Bucket, min_n: int = 1) -> dict[str, Cell]:
    """Per model label, its cell with the most scored items (n >= min_n, with a primary value)."""
    out: dict[str, Cell] = {}
    for cell in bucket.cells:
        best = out.get(cell.entrant.model_label)
        if cell.n >= min_n and np.isfinite(bucket.value_of(cell)) and (best is None or cell.n > best.n):
            out[cell.entrant.model_label] = cell
    return out


def pooled_decision(
    buckets: Sequence[Bucket], profiles: Mapping[str, Mapping[str, Any]], min_n: int, alpha: float, salt: str
) -> dict[str, Any]:
    """A decision over every item of the leaf ``buckets``, each item counted once (see the module docstring)."""
    leaves = [b for b in buckets if b.kind not in ROLLUP_KINDS]
    items: dict[str, list[np.ndarray]] = {}
    values: dict[str, list[np.ndarray]] = {}
    keys: dict[str, str] = {}
    for bucket in leaves:
        for model, cell in _largest_cells(bucket).items():
            items.setdefault(model, []).append(cell.items)
            values.setdefault(model, []).append(cell.values)
            keys[model] = cell.entrant.model.key
    contestants, too_few = [], []
    for model in sorted(items):
        order = np.argsort(np.concatenate(items[model]), kind="stable")
        codes, vals = np.concatenate(items[model])[order], np.concatenate(values[model])[order]
        if len(codes) < min_n:
            too_few.append({"model": model, "n": len(codes), "reason": f"n={len(codes)} < min_n={min_n}"})
            continue
        lo, hi, methods = ratio_intervals(vals[:, None], np.ones((len(vals), 1)))
        contestants.append(
            (
                Contestant(
                    label=model,
                    key=keys[model],
                    score=float(vals.mean()),
                    ci=(float(lo[0]), float(hi[0])),
                    n=len(codes),
                    items=codes,
                    values=vals,
                    latency=_latency(profiles, model),
                ),
                methods[0],
            )
        )
    ci_method = {c.key: m for c, m in contestants}
    decision = decide([c for c, _ in contestants], alpha, min_n, salt)
    pick = decision.pick
    out: dict[str, Any] = {
        "model": pick.label if pick else None,
        "score": json_number(pick.score) if pick else None,
        "method": decision.chosen_by,
        "test": decision.test,
        **_decision_fields(decision),
        "buckets": len(leaves),
        "items": int(len(np.unique(np.concatenate([c.items for b in leaves for c in b.cells] or [np.zeros(0)])))),
        "description": (
            "every scored item of the leaf buckets once (specialty domains, not system or broad-area rollups); "
            f"leader: {LEADER_RULE}; paired tests vs the leader, Holm; ties: {TIE_RULE}"
        ),
        "candidates": [
            {
                "model": v.contestant.label,
                "n": v.contestant.n,
                "score": json_number(v.contestant.score),
                "ci": [json_number(v.contestant.ci[0]), json_number(v.contestant.ci[1])],
                "ci_method": ci_method[v.contestant.key],
                **_verdict_json(v),
            }
            for v in decision.verdicts
        ],
        "excluded": too_few,
    }
    if pick is None:
        out["reason"] = f"no model has n >= {min_n} scored items" if leaves else "no bucket"
    return out


def default_model(
    buckets: Sequence[Bucket], profiles: Mapping[str, Mapping[str, Any]], min_n: int, alpha: float = ALPHA
) -> dict[str, Any]:
    """The fallback for questions no bucket or family serves: :func:`pooled_decision` over every leaf bucket."""
    return pooled_decision(buckets, profiles, min_n, alpha, "default")


def family_decisions(
    buckets: Sequence[Bucket], profiles: Mapping[str, Mapping[str, Any]], min_n: int, alpha: float = ALPHA
) -> dict[str, dict[str, Any]]:
    families = list(dict.fromkeys(b.family for b in buckets))
    return {
        f: pooled_decision([b for b in buckets if b.family == f], profiles, min_n, alpha, f"family:{f}")
        for f in families
    }


def parents(bucket_id: str, entry: Mapping[str, Any]) -> list[str]:
    """Where an unroutable bucket's questions go, nearest first: the system of a specialty domain,
    the family, then ``default``."""
    chain = []
    if entry["family"] == "specialty" and entry["kind"] == "domain":
        chain.append(f"specialty/system/{entry['name'].split(':', 1)[0]}")
    return [*chain, entry["family"], "default"]


def undecided(entry: Mapping[str, Any]) -> bool:
    """A routable bucket where no model was shown better than the others (its pick is the tie rule's)."""
    return bool(entry["routable"]) and entry.get("chosen_by") == "tie_rule" and len(entry.get("tied_top") or []) > 1


def serve_unroutable(
    routes: dict[str, dict[str, Any]], families: Mapping[str, Mapping[str, Any]], default: Mapping[str, Any]
) -> None:
    """Fill ``served_by`` / ``model`` of every unroutable bucket from its nearest parent with a model.

    An undecided bucket keeps its own ``served_by`` but takes the nearest parent's pick when that
    model is among its tied models: the parent decided on more items, so a tie at this level is
    broken by stronger evidence rather than by a few items' lower bounds (``chosen_by:
    parent_tie_break``, ``tie_broken_by: <parent>``)."""
    for bucket_id, entry in routes.items():
        if undecided(entry):
            for parent in parents(bucket_id, entry):
                source = (
                    routes.get(parent) if "/" in parent else (default if parent == "default" else families.get(parent))
                )
                model = (source or {}).get("model") if (source or {}).get("routable", True) else None
                if model is not None and model in entry["tied_top"]:
                    entry.update(model=model, chosen_by="parent_tie_break", tie_broken_by=parent)
                    break
            continue
        if entry["routable"]:
            continue
        entry["chosen_by"] = "fallback"
        for parent in parents(bucket_id, entry):
            source = routes.get(parent) if "/" in parent else (default if parent == "default" else families.get(parent))
            model = (source or {}).get("model") if (source or {}).get("routable", True) else None
            if model is not None:
                entry["served_by"], entry["model"] = parent, model
                break


def orchestrator(
    buckets: Sequence[Bucket],
    min_n: int,
    tasks: Sequence[str],
    component_floor: float = COMPONENT_FLOOR,
    alpha: float = ALPHA,
    profiles: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    by_id = {b.id: b for b in buckets}
    profiles = profiles or {}
    composite = (
        "mean of routing accuracy, tool-decision accuracy and (when present) the mean score over the "
        "orchestration-like capability tasks every qualifying model ran; interval = mean of the components' bounds; "
        f"nominated only with every component >= {component_floor}"
    )

    def cells(bucket_id: str) -> dict[str, Cell]:
        bucket = by_id.get(bucket_id)
        return {m: c for m, c in _largest_cells(bucket, min_n).items() if bucket.primary in c.stats} if bucket else {}

    routing, tool = cells(ROUTING_BUCKET), cells(TOOL_BUCKET)
    models = sorted(set(routing) & set(tool))
    base = {
        "composite": composite,
        "components": ["routing", "tool_decision"],
        "capability_tasks": [],
        "component_floor": component_floor,
        "alpha": alpha,
        "correction": "holm",
        "tie_rule": TIE_RULE_KEYS,
        "test": None,
        "not_nominated": [],
    }
    if not models:
        return {
            **base,
            "model": None,
            "method": "none",
            "decisive": False,
            "leader": None,
            "tied_top": [],
            "candidates": [],
            "insufficient_data": True,
            "reason": f"no model has n >= {min_n} in both {ROUTING_BUCKET} and {TOOL_BUCKET}",
        }
    capability = {t: cells(f"capability/task/{t}") for t in tasks}
    common = [t for t in tasks if capability[t] and all(m in capability[t] for m in models)]
    if common:
        base["components"].append("capability")
        base["capability_tasks"] = common
    contestants, details = [], {}
    for model in models:
        parts = {"routing": [routing[model]], "tool_decision": [tool[model]]}
        if common:
            parts["capability"] = [capability[t][model] for t in common]
        est = {name: [c.stats["score"] for c in group] for name, group in parts.items()}
        value = {name: float(np.mean([e.value for e in group])) for name, group in est.items()}
        lo = float(np.mean([np.mean([e.ci[0] for e in group]) for group in est.values()]))
        hi = float(np.mean([np.mean([e.ci[1] for e in group]) for group in est.values()]))
        draws = np.mean([np.mean([e.draws for e in group], axis=0) for group in est.values()], axis=0)
        weakest = min(value, key=lambda name: value[name])
        all_cells = [c for group in parts.values() for c in group]
        score = float(np.mean(list(value.values())))
        details[model] = {
            "model": model,
            "score": json_number(score),
            "ci": [json_number(lo), json_number(hi)],
            "components": {k: json_number(v) for k, v in value.items()},
            "weakest": {"component": weakest, "score": json_number(value[weakest])},
        }
        if value[weakest] < component_floor:
            base["not_nominated"].append(
                {**details[model], "reason": f"{weakest} {value[weakest]:.3f} < component_floor {component_floor}"}
            )
            continue
        contestants.append(
            Contestant(
                label=model,
                key=routing[model].entrant.model.key,
                score=score,
                ci=(lo, hi),
                n=sum(c.n for c in all_cells),
                items=np.sort(np.concatenate([c.items for c in all_cells])),
                values=np.zeros(0),
                latency=_latency(profiles, model),
                draws=draws,
            )
        )
    decision = decide(contestants, alpha, min_n, "orchestrator", bootstrap=True)
    pick = decision.pick
    out = {
        **base,
        "model": pick.label if pick else None,
        "method": decision.chosen_by,
        "test": decision.test,
        **_decision_fields(decision),
        "insufficient_data": False,
        "candidates": [{**details[v.contestant.label], **_verdict_json(v)} for v in decision.verdicts],
    }
    if pick is None:
        out["reason"] = f"every qualifying model has a component below component_floor {component_floor}"
    return out


def build_manifest(
    table: ScoreTable,
    buckets: Sequence[Bucket],
    runs: Sequence[RunInfo],
    parameters: dict[str, Any],
    generated_at: str | None = None,
    break_ties: Callable[[dict[str, dict[str, Any]]], None] | None = None,
) -> dict[str, Any]:
    """The manifest (module doc). ``break_ties`` sees every bucket's score decision before the unroutable
    buckets take their parents' picks, and may decide the undecided ones on other evidence (the judged
    battles of ``routing.decide.judged.mark_judged``), so the buckets a parent serves follow it."""
    min_n, top_k, floor = parameters["min_n"], parameters["top_k"], parameters.get("floor")
    alpha = parameters.get("alpha", ALPHA)
    routes = {b.id: bucket_route(b, min_n, top_k, floor, alpha) for b in buckets}
    if break_ties is not None:
        break_ties(routes)
    profiles = model_profiles(table)
    default = default_model(buckets, profiles, min_n, alpha)
    families = family_decisions(buckets, profiles, min_n, alpha)
    serve_unroutable(routes, families, default)
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "medpool-routing-manifest",
        "generated_at": generated_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "runs": [
            {
                "run_id": r.run_id,
                "dir": r.dir,
                "created_at": r.created_at,
                "pool_fingerprint": r.pool_fingerprint,
                "data_fingerprint": r.data_fingerprint,
            }
            for r in runs
        ],
        "pool_fingerprints": sorted({r.pool_fingerprint for r in runs if r.pool_fingerprint}),
        "data_fingerprints": sorted({r.data_fingerprint for r in runs if r.data_fingerprint}),
        "parameters": dict(parameters),
        "models": profiles,
        "default": default,
        "families": families,
        "orchestrator": orchestrator(
            buckets,
            min_n,
            parameters.get("orchestration_tasks", ORCHESTRATION_TASKS),
            parameters.get("component_floor", COMPONENT_FLOOR),
            alpha,
            profiles,
        ),
        "buckets": routes,
    }


def dump_yaml(document: dict[str, Any]) -> str:
    """Safe YAML; libyaml's emitter when PyYAML has it (the same text, a quarter of the time on a
    nightly's hard subset of thousands of item ids)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return yaml.dump(document, Dumper=dumper, sort_keys=False, allow_unicode=True, width=120)
