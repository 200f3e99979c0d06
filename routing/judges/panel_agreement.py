"""How much a judge panel's members agree: the ``judge_panel`` block of ``leaderboard.json``, the
manifest's judge block and the report's "Judge panel" section.

For every panel (judge identity ``panel:…``), over the rows it judged (``details.panel``):

- **Krippendorff's α** on the members' rubric totals (interval metric; a member without a verdict
  is a missing value) — per family and per bucket (``family/kind/name`` as the leaderboard's);
  ``krippendorff_alpha_total``. A warning below α = 0.67, Krippendorff's floor for drawing even
  tentative conclusions;
- **Fleiss' κ** on the members' pass/fail, over the rows every member judged — per family and
  bucket; ``fleiss_kappa_pass``;
- **each member's agreement with the panel**: the share of rows on which its pass/fail equals the
  panel's, and how often it gave no verdict;
- **the panel's cost per verdict**: judge calls and tokens per panel verdict, per member and in
  all (``results.jsonl``), and the money when ``summary.json`` prices a member that only judges.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from routing.boards.leaderboard import BUCKET_KINDS
from routing.judges.agreement import ALPHA_WARN, fleiss_kappa, krippendorff_alpha_interval
from routing.load.table import NO_DOMAIN, SCORED, ScoreTable
from routing.load.verdicts import JudgedColumns

MIN_ROWS = 5  # agreement on fewer rows is reported as None


def _member_matrix(judged: JudgedColumns, positions: np.ndarray, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(totals, passes): rows × members, nan where a member gave no verdict (passes as 1.0 / 0.0);
    a vote counts for the first of ``names`` equal to its member's name."""
    totals = np.full((len(positions), len(names)), np.nan)
    passes = np.full((len(positions), len(names)), np.nan)
    column_of = np.array([names.index(n) if n in names else -1 for n in judged.member_names] + [-1], dtype=np.int64)
    counts = judged.members[positions].astype(np.int64)
    starts = judged.member_starts()[positions]
    flat = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts) + np.arange(int(counts.sum()))
    unit = np.repeat(np.arange(len(positions)), counts)
    column = column_of[judged.member_name[flat]]
    voted = (column >= 0) & ~np.isnan(judged.member_passed[flat])
    passes[unit[voted], column[voted]] = judged.member_passed[flat][voted]
    scored = voted & ~np.isnan(judged.member_total[flat])
    totals[unit[scored], column[scored]] = judged.member_total[flat][scored]
    return totals, passes


def _agreement(totals: np.ndarray, passes: np.ndarray) -> dict[str, Any]:
    complete = ~np.isnan(passes).any(axis=1)
    n = len(totals)
    alpha = krippendorff_alpha_interval(totals) if n >= MIN_ROWS else None
    kappa = fleiss_kappa(passes[complete]) if complete.sum() >= MIN_ROWS else None
    return {
        "n": n,
        "complete": int(complete.sum()),
        "krippendorff_alpha_total": alpha,
        "fleiss_kappa_pass": kappa,
    }


def _buckets(table: ScoreTable, rows: np.ndarray) -> dict[str, np.ndarray]:
    """Bucket name (``family/kind/name`` as the leaderboard's) -> mask over ``rows``: the task
    buckets and the domain buckets of each family (rows without a domain are in none)."""
    out: dict[str, np.ndarray] = {}
    families = table.family[rows]
    for family in np.unique(families).tolist():
        name = table.names("family")[family]
        in_family = families == family
        for kind, column in BUCKET_KINDS.get(name, ()):
            if column not in ("task", "domain"):
                continue  # the verdict records carry no other bucket column
            codes = getattr(table, column)[rows]
            for code in np.unique(codes[in_family]).tolist():
                value = table.names(column)[code]
                if value and not (column == "domain" and value == NO_DOMAIN):
                    out[f"{name}/{kind}/{value}"] = in_family & (codes == code)
    return out


def _judge_calls(run_dirs: Sequence[str], names: Sequence[str]) -> dict[str, dict[str, float]]:
    """Judge-stage calls and tokens per member name, from the runs' ``results.jsonl``."""
    out = {name: {"calls": 0.0, "tokens": 0.0} for name in names}
    for run_dir in map(Path, run_dirs):
        path = run_dir / "results.jsonl"
        if not path.is_file():
            continue
        with path.open(encoding="utf-8") as f:
            for line in f:
                if '"judge:' not in line:
                    continue
                r = json.loads(line)
                who = r.get("answered_by")
                if who in out and str(r.get("stage", "")).startswith("judge:") and r.get("status") == "ok":
                    out[who]["calls"] += 1
                    out[who]["tokens"] += (r.get("prompt_tokens") or 0) + (r.get("completion_tokens") or 0)
    return out


def _judge_only_costs(run_dirs: Sequence[str], names: Sequence[str], candidates: set[str]) -> dict[str, float]:
    """The priced cost (if uncached) of members that are not candidates, from the runs' ``summary.json``."""
    costs: dict[str, float] = {}
    for run_dir in map(Path, run_dirs):
        try:
            models = (
                json.loads((run_dir / "summary.json").read_text(encoding="utf-8")).get("costs", {}).get("models", {})
            )
        except (OSError, ValueError, AttributeError):
            continue
        for name in names:
            cost = (models.get(name) or {}).get("cost_if_uncached")
            if name not in candidates and isinstance(cost, (int, float)):
                costs[name] = costs.get(name, 0.0) + float(cost)
    return costs


def build_panel_agreement(
    table: ScoreTable, judged: JudgedColumns, run_dirs: Sequence[str], candidates: set[str]
) -> dict[str, Any]:
    """The ``judge_panel`` block: one entry per panel found in the ``judged`` rows (empty without
    panels); ``candidates``: the pool names of every model scored (a member that is not one only judges)."""
    label_of = [str((record or {}).get("model")) for record in judged.judge_records]
    panels: dict[str, list[int]] = {}
    for position in np.flatnonzero(judged.panel_rule >= 0).tolist():
        panels.setdefault(label_of[int(judged.judge[position])], []).append(position)
    out: dict[str, Any] = {"alpha_warn": ALPHA_WARN, "panels": {}, "warnings": []}
    starts = judged.member_starts()
    for label, positions in sorted(panels.items()):
        first = positions[0]
        names = [judged.member_names[c] for c in judged.member_name[starts[first] : starts[first + 1]].tolist()]
        prows = np.asarray(positions, dtype=np.int64)
        rows = judged.row[prows]
        verdict = ~np.isnan(table.passed[rows]) | (table.status[rows] == SCORED)
        verdicts, rows = prows[verdict], rows[verdict]
        totals, passes = _member_matrix(judged, verdicts, names)
        panel_pass = (table.passed[rows] == 1.0).astype(float)
        members = {}
        for j, name in enumerate(names):
            given = ~np.isnan(passes[:, j])
            members[name] = {
                "verdicts": int(given.sum()),
                "missing": int((~given).sum()),
                "agreement_with_panel": float(np.mean(passes[given, j] == panel_pass[given])) if given.any() else None,
            }
        calls = _judge_calls(run_dirs, names)
        costs = _judge_only_costs(run_dirs, names, candidates)
        n = max(len(verdicts), 1)
        families = table.family[rows]
        by_family = {table.names("family")[f]: families == f for f in np.unique(families).tolist()}
        cost = {
            "calls_per_verdict": round(sum(c["calls"] for c in calls.values()) / n, 3),
            "tokens_per_verdict": round(sum(c["tokens"] for c in calls.values()) / n, 1),
            "members": {
                name: {"calls_per_verdict": round(c["calls"] / n, 3), "tokens_per_verdict": round(c["tokens"] / n, 1)}
                for name, c in calls.items()
            },
            "priced_per_verdict": round(sum(costs.values()) / n, 6) if len(costs) == len(names) else None,
        }
        entry = {
            "rule": judged.rules[int(judged.panel_rule[first])],
            "members": members,
            "overall": _agreement(totals, passes),
            "families": {f: _agreement(totals[m], passes[m]) for f, m in sorted(by_family.items())},
            "buckets": {b: _agreement(totals[m], passes[m]) for b, m in sorted(_buckets(table, rows).items())},
            "cost": cost,
        }
        out["panels"][label] = entry
        for scope, stats in [
            ("overall", entry["overall"]),
            *(("family " + f, s) for f, s in entry["families"].items()),
        ]:
            alpha = stats["krippendorff_alpha_total"]
            if alpha is not None and alpha < ALPHA_WARN:
                out["warnings"].append(
                    {
                        "kind": "panel_agreement",
                        "subject": label,
                        "message": f"{label}: members agree "
                        f"only α = {alpha:.2f} on totals ({scope}, {stats['n']} verdicts; < {ALPHA_WARN})",
                    }
                )
    return out
