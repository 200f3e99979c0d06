"""Labelled claims for calibrating the hallucination judge, and how the judge's labels are scored.

The set (default ``../shared/data/calibration/hallu_gold.yaml``) holds atomic clinical claims
with a human label::

    items:
      - {id: UNS_01, claim: "...", gold: unsupported, context: "...", kind: fabricated_dose, tier: hard}

``gold`` is one of supported / unsupported / not_sure; ``context`` is the question the claim
answers; ``tier`` groups claims by difficulty (an item without one is ``easy``, the set's base
layer). Each claim is sent as the candidate answer of the claim-level (``hallu``) contract, so
the calibration measures exactly the judge and prompt that ``--hallu`` runs use.

The judge may split a claim into several atomic claims; its label for the claim is
``unsupported`` if any part is, else ``supported`` if any part is, else ``not_sure`` (a reply
with no claim at all gives no label).

Metrics — positive class = ``unsupported`` (a hallucination the judge must catch), over claims
whose gold is supported or unsupported and that got a label::

    TP = gold unsupported ∧ label unsupported      FP = gold supported ∧ label unsupported
    FN = gold unsupported ∧ label ≠ unsupported    TN = gold supported ∧ label ≠ unsupported
    precision = TP / (TP + FP)    recall = TP / (TP + FN)    F1 = 2·TP / (2·TP + FP + FN)

(each None when its denominator is 0). 3-class accuracy = share of labelled claims whose label
equals the gold, ``not_sure`` golds included. A claim without a label (call failed, reply still
unparseable after one re-ask, no claim found) is counted as ``no_verdict`` and left out of every
rate, as an unparseable verdict is left out of a run's means; ``coverage`` = labelled / claims.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.loaders.base import ItemFormatError
from eval.loaders.yaml_records import yaml_records
from judge.verdicts import CLAIM_LABELS, HalluVerdict

DEFAULT_TIER = "easy"
NO_VERDICT = "no_verdict"
PREDICTIONS: tuple[str, ...] = (*CLAIM_LABELS, NO_VERDICT)


@dataclass(frozen=True)
class LabelledClaim:
    id: str
    claim: str
    gold: str  # supported | unsupported | not_sure
    context: str = ""
    kind: str = ""
    tier: str = DEFAULT_TIER


@dataclass(frozen=True)
class CalibrationSet:
    path: str
    sha256: str  # of the file's bytes: two calibrations are comparable only on the same set
    claims: tuple[LabelledClaim, ...]


def _text(record: Mapping[str, Any], key: str, path: Path, line: int, *, required: bool = False) -> str:
    value = record.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise ItemFormatError(path, line, key, f"must be a non-empty string, got {value!r}")
    return value.strip()


def load_calibration_set(path: str | Path) -> CalibrationSet:
    """Read and check a calibration set; problems raise ``ItemFormatError`` naming ``path:line: field``."""
    path = Path(path)
    _, records = yaml_records(path, "items")
    claims: list[LabelledClaim] = []
    seen: dict[str, int] = {}
    for record in records:
        data, line = record.data, record.line
        claim_id = _text(data, "id", path, line, required=True)
        if claim_id in seen:
            raise ItemFormatError(
                path,
                line,
                "id",
                f"duplicate id {claim_id!r} (first at line {seen[claim_id]})",
                "give every claim its own id",
            )
        seen[claim_id] = line
        gold = _text(data, "gold", path, line, required=True)
        if gold not in CLAIM_LABELS:
            raise ItemFormatError(path, line, "gold", f"must be one of {', '.join(CLAIM_LABELS)}, got {gold!r}")
        claims.append(
            LabelledClaim(
                id=claim_id,
                claim=_text(data, "claim", path, line, required=True),
                gold=gold,
                context=_text(data, "context", path, line),
                kind=_text(data, "kind", path, line),
                tier=_text(data, "tier", path, line) or DEFAULT_TIER,
            )
        )
    if not claims:
        raise ItemFormatError(path, 1, "items", "the list is empty", "add labelled claims")
    return CalibrationSet(str(path), hashlib.sha256(path.read_bytes()).hexdigest(), tuple(claims))


def claim_label(verdict: HalluVerdict) -> str | None:
    """The judge's one label for a claim it may have split (see the module doc); None without claims."""
    for label in ("unsupported", "supported", "not_sure"):
        if verdict.count(label):  # type: ignore[arg-type]
            return label
    return None


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def calibration_metrics(gold: Sequence[str], predicted: Sequence[str | None]) -> dict[str, Any]:
    """P/R/F1 on ``unsupported``, 3-class accuracy and the confusion matrix (formulas: module doc).

    ``predicted[i]`` is the judge's label for claim i, or None when it gave none. The confusion
    matrix is ``confusion[gold][prediction]`` with ``no_verdict`` as a prediction.
    """
    if len(gold) != len(predicted):
        raise ValueError(f"gold and predicted differ in length ({len(gold)} vs {len(predicted)})")
    for label in gold:
        if label not in CLAIM_LABELS:
            raise ValueError(f"gold labels must be one of {', '.join(CLAIM_LABELS)}, got {label!r}")
    for label in predicted:
        if label is not None and label not in CLAIM_LABELS:
            raise ValueError(f"predicted labels must be one of {', '.join(CLAIM_LABELS)} or None, got {label!r}")
    confusion = {g: dict.fromkeys(PREDICTIONS, 0) for g in CLAIM_LABELS}
    for g, p in zip(gold, predicted, strict=False):
        confusion[g][p or NO_VERDICT] += 1
    binary = [(g, p) for g, p in zip(gold, predicted, strict=False) if p is not None and g != "not_sure"]
    tp = sum(g == "unsupported" and p == "unsupported" for g, p in binary)
    fp = sum(g == "supported" and p == "unsupported" for g, p in binary)
    fn = sum(g == "unsupported" and p != "unsupported" for g, p in binary)
    tn = len(binary) - tp - fp - fn
    labelled = [(g, p) for g, p in zip(gold, predicted, strict=False) if p is not None]
    return {
        "n": len(gold),
        "labelled": len(labelled),
        "no_verdict": len(gold) - len(labelled),
        "coverage": _ratio(len(labelled), len(gold)),
        "unsupported": {
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "tn": tn,
            "precision": _ratio(tp, tp + fp),
            "recall": _ratio(tp, tp + fn),
            "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        },
        "accuracy_3class": _ratio(sum(g == p for g, p in labelled), len(labelled)),
        "confusion": confusion,
    }


def metrics_by_tier(claims: Sequence[LabelledClaim], predicted: Sequence[str | None]) -> dict[str, Any]:
    """``{"overall": metrics, "tiers": {tier: metrics}}`` for the claims and the judge's labels."""
    tiers: dict[str, list[int]] = {}
    for index, claim in enumerate(claims):
        tiers.setdefault(claim.tier, []).append(index)
    gold = [c.gold for c in claims]
    return {
        "overall": calibration_metrics(gold, predicted),
        "tiers": {
            tier: calibration_metrics([gold[i] for i in rows], [predicted[i] for i in rows])
            for tier, rows in sorted(tiers.items())
        },
    }
