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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from routing.boards.leaderboard import BUCKET_KINDS
from routing.judges.agreement import ALPHA_WARN, fleiss_kappa, krippendorff_alpha_interval

MIN_ROWS = 5  # agreement on fewer rows is reported as None


def _member_matrix(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(totals, passes): rows × members, nan where a member gave no verdict (passes as 1.0 / 0.0)."""
    totals = np.full((len(rows), len(names)), np.nan)
    passes = np.full((len(rows), len(names)), np.nan)
    for i, row in enumerate(rows):
        for member in row["details"]["panel"]["members"]:
            if member.get("name") in names and member.get("passed") is not None:
                j = names.index(member["name"])
                passes[i, j] = float(bool(member["passed"]))
                if member.get("total") is not None:
                    totals[i, j] = float(member["total"])
    return totals, passes


def _agreement(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    totals, passes = _member_matrix(rows, names)
    complete = ~np.isnan(passes).any(axis=1)
    alpha = krippendorff_alpha_interval(totals) if len(rows) >= MIN_ROWS else None
    kappa = fleiss_kappa(passes[complete]) if complete.sum() >= MIN_ROWS else None
    return {
        "n": len(rows),
        "complete": int(complete.sum()),
        "krippendorff_alpha_total": alpha,
        "fleiss_kappa_pass": kappa,
    }


def _buckets_of(row: Mapping[str, Any]) -> list[str]:
    family = row["family"]
    return [f"{family}/{kind}/{row[column]}" for kind, column in BUCKET_KINDS.get(family, ()) if row.get(column)]


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
    rows: Sequence[Mapping[str, Any]], run_dirs: Sequence[str], candidates: set[str]
) -> dict[str, Any]:
    """The ``judge_panel`` block: one entry per panel found in the judged ``rows`` (empty without
    panels); ``candidates``: the pool names of every model scored (a member that is not one only judges)."""
    panels: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        if isinstance((row.get("details") or {}).get("panel"), Mapping) and row.get("judge"):
            panels.setdefault(str(row["judge"].get("model")), []).append(row)
    out: dict[str, Any] = {"alpha_warn": ALPHA_WARN, "panels": {}, "warnings": []}
    for label, prows in sorted(panels.items()):
        names = [m["name"] for m in prows[0]["details"]["panel"]["members"]]
        verdicts = [r for r in prows if r.get("passed") is not None or r["status"] == "scored"]
        by_family: dict[str, list[Mapping[str, Any]]] = {}
        by_bucket: dict[str, list[Mapping[str, Any]]] = {}
        for row in verdicts:
            by_family.setdefault(row["family"], []).append(row)
            for bucket in _buckets_of(row):
                by_bucket.setdefault(bucket, []).append(row)
        _, passes = _member_matrix(verdicts, names)
        panel_pass = np.array([float(bool(r.get("passed"))) for r in verdicts])
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
            "rule": prows[0]["details"]["panel"].get("rule"),
            "members": members,
            "overall": _agreement(verdicts, names),
            "families": {f: _agreement(r, names) for f, r in sorted(by_family.items())},
            "buckets": {b: _agreement(r, names) for b, r in sorted(by_bucket.items())},
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
