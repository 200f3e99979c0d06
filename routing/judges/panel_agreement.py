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

A nightly panel gives millions of verdicts: the votes are read ``SLICE_ROWS`` judged rows at a time and
each family or bucket is a mask over the panel's rows, never a copy, so the block costs a few float
vectors over those rows; the numbers are those of reading everything at once, bit for bit.
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
SLICE_ROWS = 1 << 16  # judged rows read at a time: bounds the vote-index temporaries on 10^7-row nights


def _member_matrix(judged: JudgedColumns, positions: np.ndarray, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """(totals, passes): rows × members, nan where a member gave no verdict (passes as 1.0 / 0.0, held
    as float32: exact for those values, half the memory);
    a vote counts for the first of ``names`` equal to its member's name. ``positions`` ascending.

    Filled ``SLICE_ROWS`` judged rows at a time (each row's votes found from that slice's own running
    offsets), so the flat vote indices never span the night: the same matrices as in one go."""
    totals = np.full((len(positions), len(names)), np.nan)
    passes = np.full((len(positions), len(names)), np.nan, dtype=np.float32)
    column_of = np.array([names.index(n) if n in names else -1 for n in judged.member_names] + [-1], dtype=np.int64)
    offset, done = 0, 0  # flat index of the slice's first vote; positions filled so far
    for lo in range(0, len(judged), SLICE_ROWS):
        counts = judged.members[lo : lo + SLICE_ROWS].astype(np.int64)
        ends = np.cumsum(counts)
        upto = int(np.searchsorted(positions, lo + len(counts)))
        if upto > done:
            local = positions[done:upto] - lo
            mine = counts[local]
            flat = np.repeat(offset + ends[local] - mine - np.concatenate([[0], np.cumsum(mine)[:-1]]), mine)
            flat += np.arange(len(flat))
            unit = np.repeat(np.arange(done, upto), mine)
            column = column_of[judged.member_name[flat]]
            passed, total = judged.member_passed[flat], judged.member_total[flat]
            voted = (column >= 0) & ~np.isnan(passed)
            passes[unit[voted], column[voted]] = passed[voted]
            scored = voted & ~np.isnan(total)
            totals[unit[scored], column[scored]] = total[scored]
        offset += int(ends[-1]) if len(ends) else 0
        done = upto
        if done == len(positions):
            break
    return totals, passes


def _agreement(totals: np.ndarray, passes: np.ndarray, complete: np.ndarray, rows: np.ndarray | None) -> dict[str, Any]:
    """α and κ over the ``rows`` mask (None: all), read in place; ``complete``: every member voted."""
    n = len(totals) if rows is None else int(np.count_nonzero(rows))
    whole = int(np.count_nonzero(complete if rows is None else complete & rows))
    alpha = krippendorff_alpha_interval(totals, rows) if n >= MIN_ROWS else None
    kappa = fleiss_kappa(passes, rows) if whole >= MIN_ROWS else None
    return {
        "n": n,
        "complete": whole,
        "krippendorff_alpha_total": alpha,
        "fleiss_kappa_pass": kappa,
    }


def _buckets(table: ScoreTable, rows: np.ndarray) -> dict[str, tuple[int, str, int]]:
    """Bucket name (``family/kind/name`` as the leaderboard's) -> (family code, column, code) over
    ``rows``: the task buckets and the domain buckets of each family (rows without a domain are in
    none). Masks are made one at a time (:func:`_bucket_mask`): a night has many buckets."""
    out: dict[str, tuple[int, str, int]] = {}
    families = table.family[rows]
    for family in np.unique(families).tolist():
        name = table.names("family")[family]
        in_family = families == family
        for kind, column in BUCKET_KINDS.get(name, ()):
            if column not in ("task", "domain"):
                continue  # the verdict records carry no other bucket column
            for code in np.unique(getattr(table, column)[rows][in_family]).tolist():
                value = table.names(column)[code]
                if value and not (column == "domain" and value == NO_DOMAIN):
                    out[f"{name}/{kind}/{value}"] = (family, column, code)
    return out


def _bucket_mask(table: ScoreTable, rows: np.ndarray, bucket: tuple[int, str, int]) -> np.ndarray:
    family, column, code = bucket
    return (table.family[rows] == family) & (getattr(table, column)[rows] == code)


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


def _panels(judged: JudgedColumns) -> dict[str, np.ndarray]:
    """Panel label -> the positions (ascending) of the judged rows it gave."""
    label_of = [str((record or {}).get("model")) for record in judged.judge_records]
    positions = np.flatnonzero(judged.panel_rule >= 0)
    judges = judged.judge[positions]
    by_label: dict[str, list[int]] = {}
    for code in np.unique(judges).tolist():
        by_label.setdefault(label_of[code], []).append(code)
    return {label: positions[np.isin(judges, codes)] for label, codes in sorted(by_label.items())}


def build_panel_agreement(
    table: ScoreTable, judged: JudgedColumns, run_dirs: Sequence[str], candidates: set[str]
) -> dict[str, Any]:
    """The ``judge_panel`` block: one entry per panel found in the ``judged`` rows (empty without
    panels); ``candidates``: the pool names of every model scored (a member that is not one only judges)."""
    out: dict[str, Any] = {"alpha_warn": ALPHA_WARN, "panels": {}, "warnings": []}
    for label, prows in _panels(judged).items():
        first = int(prows[0])
        start = int(judged.members[:first].sum(dtype=np.int64))
        names = [
            judged.member_names[c] for c in judged.member_name[start : start + int(judged.members[first])].tolist()
        ]
        rows = judged.row[prows]
        verdict = ~np.isnan(table.passed[rows]) | (table.status[rows] == SCORED)
        verdicts, rows = prows[verdict], rows[verdict]
        del prows, verdict
        totals, passes = _member_matrix(judged, verdicts, names)
        n = max(len(verdicts), 1)
        del verdicts
        complete = ~np.isnan(passes).any(axis=1)
        panel_pass = table.passed[rows] == 1.0
        members = {}
        for j, name in enumerate(names):
            given = int(np.count_nonzero(~np.isnan(passes[:, j])))
            same = int(np.count_nonzero(passes[:, j] == panel_pass))  # NaN (no vote) equals nothing
            members[name] = {
                "verdicts": given,
                "missing": len(passes) - given,
                "agreement_with_panel": same / given if given else None,
            }
        del panel_pass
        calls = _judge_calls(run_dirs, names)
        costs = _judge_only_costs(run_dirs, names, candidates)
        families = table.family[rows]
        family_codes = {table.names("family")[f]: f for f in np.unique(families).tolist()}
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
            "overall": _agreement(totals, passes, complete, None),
            "families": {
                f: _agreement(totals, passes, complete, families == code) for f, code in sorted(family_codes.items())
            },
            "buckets": {
                b: _agreement(totals, passes, complete, _bucket_mask(table, rows, spec))
                for b, spec in sorted(_buckets(table, rows).items())
            },
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
