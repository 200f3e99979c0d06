"""``python -m routing.compare BASE NEW``: what changed between two runs, and whether it is significant.

Per family and bucket (the leaderboard's ``family/kind/name`` ids, plus ``family/all`` over the
family's items, each once) and per model, the paired difference NEW − BASE of the item scores
(``value``; classification items by their per-item accuracy) on the items both runs *scored* with
the same model identity and the same judge identity:

- Δ = mean of dᵢ = newᵢ − baseᵢ; 95% CI Δ ± t₀.₉₇₅,ₙ₋₁·s_d/√n (``t``); differences without spread
  get Δ ± u, u = the Wilson upper bound for 0 of n items seen to differ (``wilson (no spread)``),
  so no interval is zero-width because every item moved alike;
- the test is :func:`routing.stats.intervals.paired_difference_test` (McNemar mid-p for pass/fail, paired t
  otherwise), two-sided; p-values are Holm-adjusted over every comparison made, so the alert's
  "any significant regression" holds its family-wise error at ``alpha``;
- fewer than ``min_n`` paired items: not tested (listed in ``untested``); a bucket holding exactly
  the paired items of a more specific one (a specialty system with one domain, a family with one
  task) is not tested again, nor is a broad area holding exactly a system's or its family's items.

A family scored by a judge is *not comparable* when the set of judge identities that scored it
differs between the runs, or when a common judge's calibration (``judge_reliability`` in
``leaderboard.json``: calibration set and its headline metrics) changed: its rows are not compared
and the reason is given. Judge-free families still compare. Models are listed as added, removed or
changed identity (with the fields that differ); a changed model is never paired. Routing decisions
that changed between the runs' ``routing_manifest.yaml`` are listed with their reason
(:mod:`routing.nights.decision_changes`). Answers from the response cache are counted per run and over
the paired items, since a comparison of cached answers measures the judge and scorer, not the model.

What each comparison could see (:mod:`routing.nights.gate`): its minimum detectable drop (MDD) at
its n and the first Holm step α/m, with 80% power, and its status — ``regressed``, ``improved``, ``no
change`` (nothing found and MDD ≤ ``min_drop``) or ``inconclusive`` (nothing found, but a drop of
``min_drop`` could have been missed). ``gate`` lists that word per model and family (the comparison
holding the family's items; a family with fewer than ``min_n`` paired items is ``inconclusive``).
``--sequential`` adds the anytime-valid gate over nights (:mod:`routing.nights.gate.sequential`).

Exit codes: 0 compared; 2 bad input (a folder, summary or scores file missing or broken);
3 (``EXIT_REGRESSION``) with ``--fail-on-regression [T]``: some significant regression has Δ < −T (with
``--sequential``, also a sequential alarm); 5 (``EXIT_INCONCLUSIVE``) with ``--fail-on-inconclusive``: no
regression, but some model's family is ``inconclusive`` (3 wins when both apply).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from eval.files import FolderError, atomic_write_text, make_folder, write_failed
from routing.boards.leaderboard import BUCKET_KINDS
from routing.cli_types import OPEN_FRACTION
from routing.decide.manifest import ROLLUP_KINDS, p_number
from routing.load.runs import LoadError, load_runs
from routing.load.table import SCORED, ScoreTable
from routing.nights.compare_md import render_compare_md
from routing.nights.decision_changes import decision_changes
from routing.nights.flips import answer_flips
from routing.nights.gate.detectable import (
    DEFAULT_MIN_DROP,
    INCONCLUSIVE,
    POWER,
    REGRESSED,
    gate_status,
    minimum_detectable_drop,
)
from routing.nights.gate.options import add_gate_option
from routing.nights.gate.sequential import (
    DEFAULT_REFERENCE_NIGHTS,
    STATE_FILENAME,
    NightMean,
    SequentialStateError,
    advance,
    night_variance,
    read_state,
    write_state,
)
from routing.nights.history import HistoryError, answer_cache_flags, cached_share, read_summary_json
from routing.nights.sections import since_last_night_section
from routing.report.page import update_report_file
from routing.stats.intervals import CI_T, holm, json_number, paired_difference_test, t_interval, wilson_interval

EXIT_OK, EXIT_WRITE, EXIT_INPUT, EXIT_REGRESSION = 0, 1, 2, 3
EXIT_INCONCLUSIVE = 5  # 4 is pool.run's budget stop
INCONCLUSIVE_HELP = f"exit {EXIT_INCONCLUSIVE} when some model's family is inconclusive (and nothing regressed)"
COMPARE_JSON, COMPARE_MD = "compare.json", "compare.md"
CI_NO_SPREAD = "wilson (no spread)"
MIN_N = 5
_SCORE = {"number": json_number}  # a score or score difference (a tuple: each bound), 6 decimals, NaN as null
_P = {"number": p_number}  # a p-value, 3 significant figures


@dataclass(frozen=True)
class Delta:
    """One model in one bucket: the paired difference NEW − BASE and its test.

    Its ``compare.json`` entry is these fields in this order (a field's ``number`` rounds it for JSON;
    ``internal`` ones are left out), then ``significant``, ``direction`` and ``beyond_threshold``. A new
    per-delta number is a field here, filled where :func:`compare_runs` makes the deltas; its column in
    the report is one row of :data:`routing.nights.sections.DELTA_COLUMNS`.
    """

    bucket: str
    family: str
    model: str
    identity: str  # model identity key
    judge: str | None  # judge key (None: judge-free)
    n: int
    base: float = field(metadata=_SCORE)
    new: float = field(metadata=_SCORE)
    diff: float = field(metadata=_SCORE)
    ci: tuple[float, float] = field(metadata=_SCORE)
    ci_method: str
    test: str
    p_value: float = field(metadata=_P)
    p_holm: float = field(metadata=_P)
    alpha: float = field(metadata={"internal": True})  # the tests' level: once in the document, not per delta
    mdd: float = field(default=math.nan, metadata=_SCORE)  # minimum detectable drop (NaN: none detectable)
    mdd_method: str = ""
    min_drop: float = field(default=DEFAULT_MIN_DROP, metadata={"internal": True})

    @property
    def significant(self) -> bool:
        return self.p_holm < self.alpha and self.diff != 0

    @property
    def status(self) -> str:
        """``regressed`` / ``improved`` / ``no change`` / ``inconclusive`` (:func:`gate_status`)."""
        return gate_status(self.significant, self.diff, self.mdd, self.min_drop)

    def regression_beyond(self, threshold: float) -> bool:
        """Significantly worse, by more than ``threshold`` score points (Δ < −threshold)."""
        return self.significant and self.diff < -threshold

    def to_json(self, threshold: float) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.metadata.get("internal"):
                continue
            value, number = getattr(self, f.name), f.metadata.get("number")
            out[f.name] = (
                value if number is None else [number(x) for x in value] if isinstance(value, tuple) else number(value)
            )
        direction = "none" if not self.significant else "regression" if self.diff < 0 else "improvement"
        return {
            **out,
            "significant": self.significant,
            "direction": direction,
            "beyond_threshold": self.regression_beyond(threshold),
            "status": self.status,
        }


@dataclass(frozen=True)
class Comparison:
    base: Mapping[str, Any]  # {run_id, dir, created_at, pool_fingerprint, data_fingerprint, cached}
    new: Mapping[str, Any]
    alpha: float
    threshold: float
    min_n: int
    families: Mapping[str, Any]  # family -> {comparable, reason, judges: {base, new}}
    models: Mapping[str, Any]  # {added, removed, changed}
    deltas: tuple[Delta, ...]
    untested: tuple[Mapping[str, Any], ...] = ()
    decisions: Mapping[str, Any] = field(default_factory=dict)  # {compared, reason?, changes}
    cache: Mapping[str, Any] = field(default_factory=dict)  # over the paired answers
    notes: tuple[str, ...] = ()
    generated_at: str = ""
    min_drop: float = DEFAULT_MIN_DROP
    gate: tuple[Mapping[str, Any], ...] = ()  # per model and family: {family, model, status, bucket, n, mdd, diff}
    sequential: Mapping[str, Any] = field(default_factory=dict)  # with --sequential: the gate over nights
    night_means: tuple[tuple[NightMean, NightMean], ...] = ()  # (base, new) per tested comparison, for sequential
    flips: Mapping[str, Any] = field(default_factory=dict)  # answer flips on unchanged items (routing.nights.flips)

    def inconclusive(self) -> list[Mapping[str, Any]]:
        """The model × family entries of the gate that are ``inconclusive``."""
        return [g for g in self.gate if g["status"] == INCONCLUSIVE]

    def sequential_alarms(self) -> list[Mapping[str, Any]]:
        return [w for w in self.sequential.get("comparisons") or [] if w["status"] == REGRESSED]

    def regressions(self, threshold: float | None = None) -> list[Delta]:
        limit = self.threshold if threshold is None else threshold
        return [d for d in self.deltas if d.regression_beyond(limit)]

    def regressed(self, threshold: float) -> bool:
        """Whether any significant regression is larger than ``threshold`` (score points in [0, 1])."""
        return bool(self.regressions(threshold))

    def exit_code(self, fail_on_regression: float | None, fail_on_inconclusive: bool) -> int:
        """The gate's word as an exit code, the same for every command that compares: ``EXIT_REGRESSION``
        when ``fail_on_regression`` is given and a significant regression is larger than it (or a sequential
        alarm rang), else ``EXIT_INCONCLUSIVE`` when ``fail_on_inconclusive`` and some model's family is
        inconclusive, else ``EXIT_OK``."""
        if fail_on_regression is not None and (self.regressed(fail_on_regression) or self.sequential_alarms()):
            return EXIT_REGRESSION
        if fail_on_inconclusive and self.inconclusive():
            return EXIT_INCONCLUSIVE
        return EXIT_OK

    def to_json(self) -> dict[str, Any]:
        deltas = sorted(
            self.deltas, key=lambda d: (not d.significant, d.diff if d.significant else 0.0, d.bucket, d.model)
        )
        return {
            "schema_version": 1,
            "kind": "medpool-compare",
            "generated_at": self.generated_at,
            "alpha": self.alpha,
            "correction": "holm",
            "threshold": self.threshold,
            "min_n": self.min_n,
            "base": dict(self.base),
            "new": dict(self.new),
            "same_data": self.base.get("data_fingerprint") == self.new.get("data_fingerprint"),
            "same_pool": self.base.get("pool_fingerprint") == self.new.get("pool_fingerprint"),
            "regressions": len(self.regressions()),
            "significant": sum(d.significant for d in self.deltas),
            "tested": len(self.deltas),
            "families": dict(self.families),
            "models": dict(self.models),
            "deltas": [d.to_json(self.threshold) for d in deltas],
            "untested": list(self.untested),
            "decisions": dict(self.decisions),
            "cache": dict(self.cache),
            "notes": list(self.notes),
            "min_drop": self.min_drop,
            "power": POWER,
            "gate": [dict(g) for g in self.gate],
            "sequential": dict(self.sequential),
            "flips": dict(self.flips),
        }


# --- reading a run -----------------------------------------------------------------------------

Key = tuple[str, str, str]  # (model identity key, judge key or "", item id)


@dataclass(frozen=True)
class _Side:
    info: dict[str, Any]
    rows: dict[Key, tuple[float, str, tuple[str, ...], str]]  # key -> (value, family, bucket ids, model name)
    identities: dict[str, dict[str, dict[str, Any]]]  # model name -> identity key -> identity
    judges: dict[str, set[str]]  # family -> judge keys that scored it
    calibration: dict[str, Any] | None  # judge key -> calibration fingerprint; None: no leaderboard.json
    manifest: dict[str, Any] | None
    cache_flags: dict[tuple[str, str], bool] | None


def scored_rows(table: ScoreTable) -> dict[Key, tuple[float, str, tuple[str, ...], str]]:
    """Every scored row by (identity key, judge key, item): its value, family, bucket ids and model name."""
    families = table.names("family")
    columns = {c: (getattr(table, c), table.names(c)) for kinds in BUCKET_KINDS.values() for _, c in kinds}
    model_keys = [e.model.key for e in table.entrants]
    judge_keys = [e.judge_key or "" for e in table.entrants]
    out = {}
    places: dict[
        tuple[int, ...], tuple[str, tuple[str, ...]]
    ] = {}  # one (family, bucket ids) object per bucket combination
    for r in np.flatnonzero(table.status == SCORED).tolist():
        entrant, family_code = int(table.entrant[r]), int(table.family[r])
        family = families[family_code]
        codes = (family_code, *(int(columns[c][0][r]) for _, c in BUCKET_KINDS[family]))
        place = places.get(codes)
        if place is None:
            buckets = tuple(
                f"{family}/{kind}/{columns[c][1][code]}"
                for (kind, c), code in zip(BUCKET_KINDS[family], codes[1:], strict=True)
            )
            place = places[codes] = (family, (*buckets, f"{family}/all"))
        out[(model_keys[entrant], judge_keys[entrant], table.items[table.item[r]])] = (
            float(table.value[r]),
            place[0],
            place[1],
            table.entrants[entrant].model.name,
        )
    return out


def _calibration(run_dir: Path) -> dict[str, Any] | None:
    """Judge key -> (set sha256, headline metrics) of its latest calibration, from leaderboard.json (None if absent)."""
    try:
        board = json.loads((run_dir / "leaderboard.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    out: dict[str, Any] = {}
    for judge in ((board.get("judge_reliability") or {}).get("judges") or {}).values():
        for c in judge.get("calibration") or []:
            if c.get("judge_key"):
                out[c["judge_key"]] = {
                    "set": (c.get("set") or {}).get("sha256"),
                    "overall": c.get("overall"),
                    "calibrated_at": c.get("calibrated_at"),
                }
    return out


def _manifest(run_dir: Path) -> dict[str, Any] | None:
    try:
        manifest = yaml.safe_load((run_dir / "routing_manifest.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return None
    return manifest if isinstance(manifest, dict) else None


def read_side(run_dir: Path) -> _Side:
    """What the comparison needs from one run folder (raises HistoryError / LoadError on bad input)."""
    if not run_dir.is_dir():
        raise HistoryError(f"{run_dir}: not a directory; pass a run directory pool.run wrote")
    summary = read_summary_json(run_dir)
    table = load_runs([run_dir]).table
    identities: dict[str, dict[str, dict[str, Any]]] = {}
    judges: dict[str, set[str]] = {}
    for entrant in table.entrants:
        identities.setdefault(entrant.model.name, {})[entrant.model.key] = entrant.model.as_dict()
    families = table.names("family")
    for code, family in enumerate(families):
        keys = {table.entrants[e].judge_key for e in np.unique(table.entrant[table.family == code]).tolist()}
        judges[family] = {k for k in keys if k}
    flags = answer_cache_flags(run_dir)
    info = {
        "run_id": summary["run_id"],
        "dir": str(run_dir),
        "created_at": summary["created_at"],
        "pool_fingerprint": summary.get("pool_fingerprint"),
        "data_fingerprint": summary.get("data_fingerprint"),
        "cached": cached_share(flags),
        "judge_anchors": ((summary.get("extra") or {}).get("scoring") or {}).get("anchors"),
    }
    return _Side(info, scored_rows(table), identities, judges, _calibration(run_dir), _manifest(run_dir), flags)


# --- comparing ---------------------------------------------------------------------------------


def difference_interval(diff: np.ndarray) -> tuple[tuple[float, float], str]:
    """95% interval of the mean paired difference (module docstring), clipped to [−1, 1]."""
    n, mean = len(diff), float(diff.mean())
    if n >= 2 and np.ptp(diff) > 1e-12:
        lo, hi = t_interval(mean, float(diff.std(ddof=1)), n)
        return (max(-1.0, float(lo)), min(1.0, float(hi))), CI_T
    half = float(wilson_interval(0, n)[1])
    return (max(-1.0, mean - half), min(1.0, mean + half)), CI_NO_SPREAD


def family_comparability(base: _Side, new: _Side) -> dict[str, dict[str, Any]]:
    """Per family: comparable or not, and why (judge set changed, or a common judge's calibration changed)."""
    out = {}
    for family in sorted(base.judges.keys() | new.judges.keys()):
        b, n = base.judges.get(family, set()), new.judges.get(family, set())
        entry: dict[str, Any] = {"comparable": True, "reason": None, "judges": {"base": sorted(b), "new": sorted(n)}}
        if family not in base.judges or family not in new.judges:
            entry.update(comparable=False, reason=f"scored in the {'new' if family in new.judges else 'base'} run only")
        elif b != n:
            entry.update(
                comparable=False,
                reason=f"judge changed: {', '.join(sorted(b)) or 'none'} → {', '.join(sorted(n)) or 'none'}; "
                "scores are not comparable",
            )
        elif b and base.calibration is not None and new.calibration is not None:
            moved = [
                k
                for k in sorted(b)
                if k in base.calibration
                and k in new.calibration
                and (base.calibration[k]["set"], base.calibration[k]["overall"])
                != (new.calibration[k]["set"], new.calibration[k]["overall"])
            ]
            if moved:
                entry.update(
                    comparable=False,
                    reason=f"judge calibration changed ({', '.join(moved)}); scores are not comparable",
                )
        out[family] = entry
    return out


def _differing(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return sorted(
        k for k in a.keys() | b.keys() if json.dumps(a.get(k), sort_keys=True) != json.dumps(b.get(k), sort_keys=True)
    )


def model_changes(base: _Side, new: _Side) -> dict[str, Any]:
    """Models (pool names) added, removed, or run under another identity (with the fields that differ)."""
    added = [
        {"name": m, "identities": sorted(new.identities[m])}
        for m in sorted(new.identities.keys() - base.identities.keys())
    ]
    removed = [
        {"name": m, "identities": sorted(base.identities[m])}
        for m in sorted(base.identities.keys() - new.identities.keys())
    ]
    changed = []
    for name in sorted(base.identities.keys() & new.identities.keys()):
        b, n = base.identities[name], new.identities[name]
        if set(b) != set(n):
            fields = sorted(
                {f for kb in b.keys() - n.keys() for kn in n.keys() - b.keys() for f in _differing(b[kb], n[kn])}
            )
            changed.append({"name": name, "base": sorted(b), "new": sorted(n), "fields": fields})
    return {"added": added, "removed": removed, "changed": changed}


def _label(name: str, key: str, judge: str, base: _Side, new: _Side, family_judges: int) -> str:
    """The pool name; with the identity key when the name stands for several identities, the judge
    when several judged."""
    several = len(base.identities.get(name, {})) > 1 or len(new.identities.get(name, {})) > 1
    label = f"{name} #{key}" if several else name
    return f"{label} | judge {judge}" if judge and family_judges > 1 else label


def _specificity(bucket: str) -> int:
    """0 for a leaf bucket (task, domain, skill), 1 for a specialty system, 2 for ``family/all``, 3 for a
    broad area: a broad area holding exactly a system's or the whole family's items is reported under that name."""
    parts = bucket.split("/")
    return 2 if len(parts) == 2 else 3 if parts[1] == "broad_area" else 1 if parts[1] in ROLLUP_KINDS else 0


def distinct_groups(groups: Mapping[tuple[str, str, str], Any]) -> dict[tuple[str, str, str], Any]:
    """The groups ``(bucket, identity, judge) -> (..., items)`` without those holding exactly the paired items of a more
    specific bucket (a system with one domain, a family with one task): the same evidence is tested once."""
    kept: dict[tuple[str, str, tuple[str, ...]], tuple[tuple[str, str, str], Any]] = {}
    for key, group in sorted(groups.items(), key=lambda kv: (_specificity(kv[0][0]), kv[0])):
        kept.setdefault((key[1], key[2], tuple(group[-1])), (key, group))
    return dict(kept.values())


def family_gate(
    groups: Mapping[tuple[str, str, str], Any],
    kept: Mapping[tuple[str, str, str], Any],
    deltas: Sequence[Delta],
    min_n: int,
) -> tuple[dict[str, Any], ...]:
    """Per model and family, the gate's word from the comparison holding the family's paired items (``family/all``
    or the bucket it is reported under); ``inconclusive`` when that comparison was too small to test."""
    by_items = {(key[1], key[2], tuple(group[-1])): key[0] for key, group in kept.items()}
    by_key = {(d.bucket, d.identity, d.judge or ""): d for d in deltas}
    out = []
    for (bucket, identity, judge), group in sorted(groups.items()):
        if not bucket.endswith("/all"):
            continue
        family, name = bucket.split("/", 1)[0], group[2]
        shown = by_items.get((identity, judge, tuple(group[-1])), bucket)
        d = by_key.get((shown, identity, judge))
        if d is None:
            reason = f"only {len(group[-1])} paired items (< min_n {min_n})"
            entry = {"family": family, "model": name, "bucket": shown, "n": len(group[-1]), "status": INCONCLUSIVE}
            out.append({**entry, "mdd": None, "diff": None, "reason": reason})
            continue
        out.append(
            {"family": family, "model": d.model, "bucket": shown, "n": d.n, "status": d.status,
             "mdd": json_number(d.mdd), "diff": json_number(d.diff), "reason": None}
        )  # fmt: skip
    return tuple(out)


def compare_runs(
    base: Path,
    new: Path,
    *,
    threshold: float = 0.0,
    alpha: float = 0.05,
    min_n: int = MIN_N,
    min_drop: float = DEFAULT_MIN_DROP,
) -> Comparison:
    """Compare two run folders (module docstring); raises :class:`HistoryError` / :class:`LoadError` on bad input."""
    b, n = read_side(Path(base)), read_side(Path(new))
    families = family_comparability(b, n)
    groups: dict[tuple[str, str, str], tuple[list[float], list[float], str, list[str]]] = {}
    cached_new = cached_both = paired_answers = 0
    seen_answers: set[tuple[str, str]] = set()
    for key in sorted(b.rows.keys() & n.rows.keys()):
        base_value, family, _, name = b.rows[key]
        new_value, _, buckets, _ = n.rows[key]
        if not families.get(family, {}).get("comparable"):
            continue
        answer = (name, key[2])
        if answer not in seen_answers:
            seen_answers.add(answer)
            paired_answers += 1
            in_new = bool((n.cache_flags or {}).get(answer))
            cached_new += in_new
            cached_both += in_new and bool((b.cache_flags or {}).get(answer))
        for bucket in buckets:
            xs, ys, _, items = groups.setdefault((bucket, key[0], key[1]), ([], [], name, []))
            xs.append(base_value)
            ys.append(new_value)
            items.append(key[2])
    tested, untested, paired = [], [], []
    kept = distinct_groups(groups)
    for (bucket, identity, judge), (xs, ys, name, _) in sorted(kept.items()):
        family = bucket.split("/", 1)[0]
        label = _label(name, identity, judge, b, n, len(families[family]["judges"]["new"]))
        if len(xs) < min_n:
            untested.append(
                {
                    "bucket": bucket,
                    "model": label,
                    "n": len(xs),
                    "reason": f"only {len(xs)} paired items (< min_n {min_n})",
                }
            )
            continue
        before, after = np.asarray(xs), np.asarray(ys)
        p, mean, test = paired_difference_test(after, before)
        ci, method = difference_interval(after - before)
        paired.append((before, after))
        tested.append(
            {
                "bucket": bucket,
                "family": family,
                "model": label,
                "identity": identity,
                "judge": judge or None,
                "n": len(xs),
                "base": float(before.mean()),
                "new": float(after.mean()),
                "diff": mean,
                "ci": ci,
                "ci_method": method,
                "test": test,
                "p_value": p,
            }
        )
    adjusted = holm([t["p_value"] for t in tested])
    level = alpha / max(1, len(tested))  # Holm's first step: what a lone regression among them must pass
    detectable = [minimum_detectable_drop(before, after, level) for before, after in paired]
    deltas = tuple(
        Delta(**t, p_holm=float(q), alpha=alpha, mdd=mdd, mdd_method=how, min_drop=min_drop)
        for t, q, (mdd, how) in zip(tested, adjusted, detectable, strict=True)
    )
    night_means = tuple(
        tuple(
            NightMean(
                key=f"{d.bucket}\t{d.identity}\t{d.judge or ''}",
                bucket=d.bucket,
                model=d.model,
                run_id=side.info["run_id"],
                mean=float(values.mean()),
                variance=night_variance(float((after - before).var(ddof=1)) if d.n > 1 else math.nan, d.n),
                n=d.n,
            )
            for side, values in ((b, before), (n, after))
        )
        for d, (before, after) in zip(deltas, paired, strict=True)
    )
    notes = []
    if b.info["data_fingerprint"] != n.info["data_fingerprint"]:
        notes.append("data fingerprints differ: compared on the items both runs scored")
    if b.info["pool_fingerprint"] != n.info["pool_fingerprint"]:
        notes.append("pool fingerprints differ (models or judge settings changed)")
    anchors = n.info.get("judge_anchors") or {}
    if anchors.get("drift_warning"):
        previous = anchors["previous"]
        notes.append(
            f"JUDGE DRIFT: fresh verdicts on {previous['n']} anchor answers agree with the earlier nights' "
            f"verdicts on pass/fail for {previous['pass_agreement']:.0%} (floor {anchors['floor']:.0%}; mean "
            f"|Δ total| {previous['mean_abs_total_diff']}/40): judged scores may not be comparable"
        )
    if b.manifest is None or n.manifest is None:
        missing = ", ".join(s.info["dir"] for s in (b, n) if s.manifest is None)
        decisions: dict[str, Any] = {
            "compared": False,
            "reason": f"no readable routing_manifest.yaml in {missing}",
            "changes": [],
        }
    else:
        decisions = {"compared": True, "changes": decision_changes(b.manifest, n.manifest)}
    cache = {
        "paired_answers": paired_answers,
        "cached_in_new": cached_new,
        "cached_in_both": cached_both,
        "share_cached_in_new": round(cached_new / paired_answers, 4)
        if paired_answers and n.cache_flags is not None
        else None,
    }
    return Comparison(
        base=b.info,
        new=n.info,
        alpha=alpha,
        threshold=threshold,
        min_n=min_n,
        families=families,
        models=model_changes(b, n),
        deltas=deltas,
        untested=tuple(untested),
        decisions=decisions,
        cache=cache,
        notes=tuple(notes),
        generated_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        min_drop=min_drop,
        gate=family_gate(groups, kept, deltas, min_n),
        night_means=night_means,  # type: ignore[arg-type]
        flips=answer_flips(Path(base), Path(new)),
    )


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return json_number(value)
    return [_rounded(v) for v in value] if isinstance(value, list) else value


def with_sequential(
    comparison: Comparison, state_path: Path, *, reference_nights: int = DEFAULT_REFERENCE_NIGHTS
) -> Comparison:
    """Advance the sequential gate's state at ``state_path`` by this comparison's nights, write it, and return the
    comparison with its ``sequential`` block (raises :class:`SequentialStateError` on a broken state file)."""
    state, words = advance(
        read_state(state_path),
        [b for b, _ in comparison.night_means],
        [n for _, n in comparison.night_means],
        data_fingerprint=comparison.new.get("data_fingerprint"),
        alpha=comparison.alpha,
        min_drop=comparison.min_drop,
        reference_nights=reference_nights,
    )
    write_state(state_path, state)
    block = {
        "state": str(state_path),
        "reference_nights": reference_nights,
        "alpha": comparison.alpha,
        "regressed": sum(w["status"] == REGRESSED for w in words),
        "comparisons": [{k: _rounded(v) for k, v in w.items()} for w in words],
        "notes": state.get("notes") or [],
    }
    return replace(comparison, sequential=block)


def write_comparison(out_dir: Path, comparison: Comparison) -> tuple[Path, Path]:
    """Write ``compare.json`` and ``compare.md`` into ``out_dir`` (created), each atomically."""
    out_dir = make_folder(Path(out_dir), "--out")
    document = comparison.to_json()
    json_path, md_path = out_dir / COMPARE_JSON, out_dir / COMPARE_MD
    atomic_write_text(json_path, json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    atomic_write_text(md_path, render_compare_md(document))
    return json_path, md_path


# --- CLI ---------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m routing.compare",
        description="Compare two runs: paired differences per family, bucket and model (Holm-adjusted), models added / "
        "removed / changed, judge changes, routing decisions changed. Writes compare.json and compare.md.",
        epilog=f"Exit codes: {EXIT_OK} compared; {EXIT_WRITE} writing the files failed; {EXIT_INPUT} bad input; "
        f"{EXIT_REGRESSION} with --fail-on-regression: a "
        "significant regression larger than the threshold (with --sequential, also a sequential alarm); "
        f"{EXIT_INCONCLUSIVE} with --fail-on-inconclusive: no such regression, but some model's family is "
        "inconclusive (its test could not have seen a drop of --min-drop).",
    )
    parser.add_argument("base", metavar="BASE", help="the earlier run directory")
    parser.add_argument("new", metavar="NEW", help="the later run directory")
    parser.add_argument(
        "--out",
        metavar="DIR",
        help="where compare.json / compare.md go (default: NEW); a report.html there gets a 'Since last night' section",
    )
    add_gate_option(
        parser,
        "--fail-on-regression",
        f"exit {EXIT_REGRESSION} when a significant regression is larger than THRESHOLD score points "
        "(default when given without a value: 0, i.e. any significant regression)",
    )
    parser.add_argument(
        "--alpha",
        type=OPEN_FRACTION,
        default=0.05,
        help="family-wise level of the Holm-adjusted tests (default %(default)s)",
    )
    parser.add_argument(
        "--min-n", type=int, default=MIN_N, help="paired items needed to test a model in a bucket (default %(default)s)"
    )
    add_gate_option(
        parser,
        "--min-drop",
        "the drop that matters, in score points (scores are fractions: 0.05 = 5 points): 'no change' only when "
        f"the test found nothing and could have found this drop with {POWER:.0%}% power, else 'inconclusive' "
        "(default %(default)s)",
    )
    add_gate_option(parser, "--fail-on-inconclusive", INCONCLUSIVE_HELP)
    add_gate_option(
        parser,
        "--sequential",
        f"also run the sequential gate over nights: its state is {STATE_FILENAME} in --root; looking every "
        "night does not inflate its false alarms",
    )
    parser.add_argument(
        "--root",
        metavar="DIR",
        help="with --sequential: the runs root holding index.jsonl and the state (default: NEW's parent folder)",
    )
    add_gate_option(
        parser,
        "--reference-nights",
        "with --sequential: nights that form the reference before monitoring starts (default %(default)s)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    threshold = 0.0 if args.fail_on_regression is None else args.fail_on_regression
    try:
        comparison = compare_runs(
            Path(args.base),
            Path(args.new),
            threshold=threshold,
            alpha=args.alpha,
            min_n=max(1, args.min_n),
            min_drop=args.min_drop,
        )
        if args.sequential:
            root = Path(args.root) if args.root else Path(args.new).resolve().parent
            comparison = with_sequential(
                comparison, root / STATE_FILENAME, reference_nights=max(1, args.reference_nights)
            )
    except (HistoryError, LoadError, SequentialStateError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:  # writing the sequential state failed; the runs compared are untouched
        print(write_failed("the sequential gate's state", exc), file=sys.stderr)
        return EXIT_WRITE
    out = Path(args.out) if args.out else Path(args.new)
    try:
        json_path, md_path = write_comparison(out, comparison)
        update_report_file(out / "report.html", {"since-last-night": since_last_night_section(comparison.to_json())})
    except FolderError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except OSError as exc:  # e.g. a full disk; the runs compared are untouched
        print(write_failed("the comparison", exc), file=sys.stderr)
        return EXIT_WRITE
    sys.stdout.write(md_path.read_text(encoding="utf-8"))
    print(f"wrote {json_path} and {md_path}")
    return comparison.exit_code(args.fail_on_regression, args.fail_on_inconclusive)
