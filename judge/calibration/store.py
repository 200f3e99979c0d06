"""The calibration store: one JSON file per judge identity, every calibration of it kept.

Folder: ``$MEDPOOL_CALIBRATION_DIR``, else ``calibrations/`` in the response cache folder
(``$MEDPOOL_CACHE_DIR``, else ``~/.cache/medpool`` — the rule of ``pool.execute.response_cache``);
``pool.calibrate --store DIR`` and ``routing.build --calibrations DIR`` override it.

``<folder>/<judge key>.json``::

    {"schema_version": 1, "kind": "medpool-judge-calibration", "judge_key": KEY,
     "identity": {...}, "history": [entry, ...]}                       # oldest first
    entry = {"calibrated_at", "set": {"path", "sha256", "claims"}, "metrics": {"overall", "tiers"},
             "claims": [{"id", "tier", "kind", "gold", "predicted"}], "drift": {...} | null}

The identity holds everything that shapes a verdict: pool name, backend name and type, endpoint,
model id, generation settings, the prompt version of every contract, and ``run_stages`` — the
stage names a run store gives this judge's rubric verdicts. The judge key is the name plus the
first 12 hex of the identity's sha256, so a judge that differs in anything is another file.
A run's report finds its judge's calibrations by those stage names (see ``routing.judges.reliability``).

Criteria calibrations (``pool.calibrate --set criteria``) carry ``"set_kind": "criteria"`` in the
identity (so they never share a file with a claim calibration of the same judge; a panel's
identity is ``panel:<members>``, its rule and each member's key) and an entry of their own shape::

    entry = {"calibrated_at", "set": {"kind": "criteria", "path", "sha256", "answers", ...},
             "metrics": {"overall": {"topic" | "warning" | "forbidden": {precision, recall, f1, ...},
                                     "holistic": {"spearman", "scored"}, "answers", ...}},
             "criteria": [{"id": "<answer id>#<criterion id>", "kind", "truth", "predicted"}],
             "answers": [{"id", "true_coverage", "coverage"}], "drift": {...} | null}

A judge asked with token logprobs also gets the probability-weighted side
(``judge.calibration.probabilities``): ``metrics.overall.weighted`` = {auc, threshold, at_default,
at_threshold, holistic}, ``p_met`` on each criterion row, ``weighted_coverage`` on each answer, and
``p_met_threshold`` = {value, youden_j, sensitivity, specificity, criteria, met} | null — the cut runs
of this judge use for P(met) (:func:`p_met_threshold`; 0.5 without one). A claim entry of such a judge
has ``metrics.weighted`` = {auc, threshold, at_default, at_threshold} for P(unsupported) and
``p_unsupported`` on each claim row.

Drift: a calibration is compared with the latest earlier one of the same identity on the same
set (same sha256); flagged when |ΔF1 on unsupported| or |Δ3-class accuracy| > ``DRIFT_THRESHOLD``
— for a criteria entry, when the |Δ| of the topic, warning or forbidden F1, of the holistic
Spearman ρ or of the AUC of P(met) is. A delta is None (never flagged) when either side's metric is undefined.
Under one identity that means the model behind the endpoint changed or its sampling is not
deterministic — re-calibrate with ``--no-cache``, since cached replies cannot drift.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from eval.files import atomic_write_text
from judge.calibration.probabilities import DEFAULT_THRESHOLD

SCHEMA_VERSION = 1
KIND = "medpool-judge-calibration"
STORE_ENV = "MEDPOOL_CALIBRATION_DIR"
DRIFT_THRESHOLD = 0.1
DRIFT_METRICS = (
    ("f1", ("unsupported", "f1")),
    ("precision", ("unsupported", "precision")),
    ("recall", ("unsupported", "recall")),
    ("accuracy_3class", ("accuracy_3class",)),
)
FLAGGING = ("f1", "accuracy_3class")
CRITERIA_SET_KIND = "criteria"
CRITERIA_DRIFT_METRICS = (
    ("topic_f1", ("topic", "f1")),
    ("warning_f1", ("warning", "f1")),
    ("forbidden_f1", ("forbidden", "f1")),
    ("holistic_spearman", ("holistic", "spearman")),
    ("p_met_auc", ("weighted", "auc", "all")),
)
# The entry field holding the P(met) cut a criteria calibration chose (judge.calibration.probabilities).
THRESHOLD_KEY = "p_met_threshold"


class CalibrationStoreError(ValueError):
    """A store file that cannot be read; the message names the file."""


def default_store_dir() -> Path:
    """``$MEDPOOL_CALIBRATION_DIR``, else ``$MEDPOOL_CACHE_DIR/calibrations``, else
    ``~/.cache/medpool/calibrations``."""
    if os.environ.get(STORE_ENV):
        return Path(os.environ[STORE_ENV]).expanduser()
    cache = os.environ.get("MEDPOOL_CACHE_DIR")
    return (Path(cache).expanduser() if cache else Path.home() / ".cache" / "medpool") / "calibrations"


def judge_key(identity: Mapping[str, Any]) -> str:
    """``<name>-<sha256 of the canonical identity JSON, 12 hex>``; the name is made file-safe."""
    blob = json.dumps(identity, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", str(identity.get("name", "judge")))[:60] or "judge"
    return f"{name}-{hashlib.sha256(blob.encode('utf-8')).hexdigest()[:12]}"


def _metric(entry: Mapping[str, Any], path: tuple[str, ...]) -> float | None:
    value: Any = entry.get("metrics", {}).get("overall", {})
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value if isinstance(value, (int, float)) else None


def is_criteria_entry(entry: Mapping[str, Any]) -> bool:
    """Whether ``entry`` is a criteria calibration (``set.kind == "criteria"``) rather than a claim one."""
    place = entry.get("set")
    return isinstance(place, Mapping) and place.get("kind") == CRITERIA_SET_KIND


def _deltas(
    previous: Mapping[str, Any], current: Mapping[str, Any], metrics: Iterable[tuple[str, tuple[str, ...]]]
) -> dict[str, float | None]:
    deltas: dict[str, float | None] = {}
    for name, path in metrics:
        before, after = _metric(previous, path), _metric(current, path)
        deltas[name] = None if before is None or after is None else after - before
    return deltas


def _changed(previous: Iterable[Mapping[str, Any]], current: Iterable[Mapping[str, Any]], field: str) -> list[str]:
    """Ids in both lists whose ``field`` differs."""
    before = {row["id"]: row.get(field) for row in previous}
    return [row["id"] for row in current if row["id"] in before and before[row["id"]] != row.get(field)]


def drift(
    previous: Mapping[str, Any], current: Mapping[str, Any], threshold: float = DRIFT_THRESHOLD
) -> dict[str, Any]:
    """How ``current`` differs from ``previous`` (same identity, same set): deltas, changed predictions, flag."""
    if is_criteria_entry(current):
        deltas = _deltas(previous, current, CRITERIA_DRIFT_METRICS)
        changed = {
            "changed_criteria": _changed(previous.get("criteria", []), current.get("criteria", []), "predicted"),
            "changed_coverage": _changed(previous.get("answers", []), current.get("answers", []), "coverage"),
        }
        flagging: Iterable[str] = deltas
    else:
        deltas = _deltas(previous, current, DRIFT_METRICS)
        changed = {"changed_claims": _changed(previous.get("claims", []), current.get("claims", []), "predicted")}
        flagging = FLAGGING
    flagged = any(deltas[name] is not None and abs(deltas[name]) > threshold for name in flagging)  # type: ignore[arg-type]
    return {
        "against": previous.get("calibrated_at"),
        "delta": deltas,
        **changed,
        "threshold": threshold,
        "flagged": flagged,
    }


def read_store_file(path: Path) -> dict[str, Any]:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CalibrationStoreError(
            f"{path}: not a readable calibration file ({exc}); move it away to start afresh"
        ) from None
    if not isinstance(record, dict) or record.get("kind") != KIND or not isinstance(record.get("history"), list):
        raise CalibrationStoreError(
            f"{path}: not a medpool calibration file (kind {KIND!r} with a history list expected)"
        )
    return record


def record_calibration(
    store_dir: Path | str, identity: Mapping[str, Any], entry: Mapping[str, Any]
) -> tuple[Path, dict[str, Any]]:
    """Append ``entry`` to the identity's history (drift filled in); returns the file and the stored entry."""
    store_dir = Path(store_dir)
    store_dir.mkdir(parents=True, exist_ok=True)
    key = judge_key(identity)
    path = store_dir / f"{key}.json"
    record = (
        read_store_file(path)
        if path.exists()
        else {
            "schema_version": SCHEMA_VERSION,
            "kind": KIND,
            "judge_key": key,
            "identity": dict(identity),
            "history": [],
        }
    )
    same_set = [e for e in record["history"] if e.get("set", {}).get("sha256") == entry.get("set", {}).get("sha256")]
    stored = {**entry, "drift": drift(same_set[-1], entry) if same_set else None}
    record["history"].append(stored)
    atomic_write_text(path, json.dumps(record, ensure_ascii=False, indent=1) + "\n")
    return path, stored


def calibrations(store_dir: Path | str) -> list[dict[str, Any]]:
    """Every readable calibration file of the folder (unreadable ones are skipped: a report must not fail on them)."""
    store_dir = Path(store_dir)
    if not store_dir.is_dir():
        return []
    out = []
    for path in sorted(store_dir.glob("*.json")):
        try:
            out.append({**read_store_file(path), "file": str(path)})
        except CalibrationStoreError:
            continue
    return out


def p_met_threshold(
    records: Iterable[Mapping[str, Any]], stages: Iterable[str], criteria_items_version: str
) -> tuple[float, str | None]:
    """The P(met) cut for a judge whose rubric verdicts get one of ``stages``: the threshold of the newest
    criteria calibration of exactly that judge (same stages, same ``criteria_items`` prompt version) that
    chose one, and that calibration's judge key; else ``(DEFAULT_THRESHOLD, None)``."""
    best: tuple[str, float, str] | None = None  # (calibrated_at, cut, key)
    for record in for_stages(records, stages, set_kind=CRITERIA_SET_KIND):
        if record.get("identity", {}).get("prompt_versions", {}).get("criteria_items") != criteria_items_version:
            continue
        for entry in record.get("history", []):
            chosen = entry.get(THRESHOLD_KEY)
            value = chosen.get("value") if isinstance(chosen, Mapping) else None
            if isinstance(value, (int, float)) and 0.0 <= value <= 1.0:
                stamp = str(entry.get("calibrated_at", ""))
                if best is None or stamp >= best[0]:
                    best = (stamp, float(value), str(record.get("judge_key", "")))
    return (DEFAULT_THRESHOLD, None) if best is None else (best[1], best[2])


def for_stages(
    records: Iterable[Mapping[str, Any]], stages: Iterable[str], set_kind: str = "claims"
) -> list[Mapping[str, Any]]:
    """The calibrations of ``set_kind`` (``claims``, or ``criteria``) whose judge gives its rubric
    verdicts one of these run stages (exact identity); claim and criteria entries differ in shape."""
    wanted = set(stages)
    return [
        r
        for r in records
        if r.get("identity", {}).get("set_kind", "claims") == set_kind
        and wanted & set(r.get("identity", {}).get("run_stages", {}).values())
    ]
