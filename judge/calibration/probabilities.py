"""A judge's P(met) per criterion against the truth: how well it ranks, and where to cut it.

A judge asked with token logprobs gives each criterion of a ``criteria_items`` verdict a probability
P(met) (``judge.weighting``; for a forbidden statement P(said)). On a set whose truth is known
(``judge.calibration.criteria_set``) that gives:

- the **AUC** of P(met) against the truth — the probability that a criterion that is met gets a
  higher P(met) than one that is not (Mann–Whitney U / (n₁·n₀), ties counting ½); threshold-free;
- a **threshold** t, criterion met ⇔ P(met) ≥ t, chosen to maximise Youden's J = sensitivity +
  specificity − 1. Youden's J, not F1, because J does not depend on how many criteria are met: the
  set's prevalence is fixed by construction (a topic or warning is put in with probability ½, a
  forbidden statement in every third answer) and a night's answers have another; F1 would move the
  cut with the set's prevalence, and it ignores true negatives, which for forbidden statements are
  the point. Among cuts of equal J the one nearest the uncalibrated 0.5 is kept; the cut is placed
  halfway between the lowest P(met) counted as met and the next lower P(met) in the set, so a value
  the set did not see falls on the side its neighbours did. No threshold is chosen from fewer than
  :data:`MIN_CRITERIA` criteria with a P(met), when they are all met or all not met, or when no cut
  does better than chance (best J ≤ 0: P(met) ranks no better than a coin, or inversely) — runs then
  cut at :data:`DEFAULT_THRESHOLD`.

Forbidden statements are pooled with topics and warnings: one threshold per judge identity, since a
judge's probabilities are its own whatever the criterion says.

The claim set (``judge.calibration.claim_set``) gets the same side, for P(unsupported) against the
gold ``unsupported`` (:func:`weighted_claim_metrics`); runs do not cut claim labels with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.stats import rankdata

from judge.calibration.criteria_set import criteria_item_metrics, holistic_coverage_rank
from judge.contracts.criteria_items import KINDS, kind_of
from judge.verdicts import CLAIM_LABELS
from judge.weighting import TokenView, label_probabilities, value_spans

DEFAULT_THRESHOLD = 0.5  # P(met) ≥ ½: the judge finds "met" more likely than not
MIN_CRITERIA = 20


@dataclass(frozen=True)
class Threshold:
    """The cut chosen for P(met) and what it achieved on the set it was chosen on."""

    value: float
    youden_j: float
    sensitivity: float
    specificity: float
    criteria: int  # with a P(met) and a truth
    met: int  # of which met

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


def _pairs(p_met: Sequence[float | None], truth: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    if len(p_met) != len(truth):
        raise ValueError(f"p_met and truth differ in length ({len(p_met)} vs {len(truth)})")
    keep = [(float(p), bool(t)) for p, t in zip(p_met, truth, strict=True) if p is not None]
    if any(not 0.0 <= p <= 1.0 for p, _ in keep):
        raise ValueError("P(met) must lie in 0…1")
    return np.array([p for p, _ in keep], dtype=float), np.array([t for _, t in keep], dtype=bool)


def roc_auc(p_met: Sequence[float | None], truth: Sequence[bool]) -> float | None:
    """AUC of P(met) against the truth (module doc); criteria without a P(met) are left out.
    None when no criterion is met or none is not (the AUC is undefined then)."""
    p, t = _pairs(p_met, truth)
    met, unmet = int(t.sum()), int((~t).sum())
    if met == 0 or unmet == 0:
        return None
    ranks = rankdata(p)  # mid-ranks: a tie counts ½
    return float((ranks[t].sum() - met * (met + 1) / 2) / (met * unmet))


def choose_threshold(
    p_met: Sequence[float | None], truth: Sequence[bool], min_criteria: int = MIN_CRITERIA
) -> Threshold | None:
    """The Youden-optimal cut for P(met) (module doc); None when the set cannot choose one."""
    p, t = _pairs(p_met, truth)
    met, unmet = int(t.sum()), int((~t).sum())
    if len(p) < min_criteria or met == 0 or unmet == 0:
        return None
    values = np.unique(p)  # ascending; cutting at values[k] counts values[k:] as met
    best: tuple[float, float, float, float, float] | None = None  # (J, -|t - 0.5|, t, sens, spec)
    for k, low in enumerate(values):
        cut = float(low if k == 0 else (low + values[k - 1]) / 2)
        said = p >= low
        sensitivity = float((said & t).sum() / met)
        specificity = float((~said & ~t).sum() / unmet)
        candidate = (sensitivity + specificity - 1, -abs(cut - DEFAULT_THRESHOLD), cut, sensitivity, specificity)
        if best is None or candidate[:2] > best[:2]:
            best = candidate
    assert best is not None
    j, _, cut, sensitivity, specificity = best
    if j <= 0:
        return None  # P(met) no better than chance: no cut can use it
    return Threshold(round(cut, 6), round(j, 6), sensitivity, specificity, len(p), met)


def met_at(
    p_rows: Sequence[Mapping[str, float] | None], threshold: float = DEFAULT_THRESHOLD
) -> list[dict[str, bool] | None]:
    """``{criterion id: P(met) ≥ threshold}`` per answer (None stays None): the weighted verdict,
    in the shape ``criteria_item_metrics`` reads."""
    return [None if row is None else {cid: p >= threshold for cid, p in row.items()} for row in p_rows]


def weighted_criteria_metrics(
    truth_rows: Sequence[Mapping[str, bool]],
    p_rows: Sequence[Mapping[str, float] | None],
    true_coverages: Sequence[float],
    weighted_coverages: Sequence[float | None],
) -> dict[str, Any] | None:
    """The probability-weighted side of a criteria calibration, beside the plain one: AUC of P(met)
    (all criteria and per kind), the chosen :class:`Threshold`, per-kind P/R/F1 with met = P(met) ≥ 0.5
    and ≥ the threshold (``criteria_item_metrics``; chosen on this same set, so optimistic), and the
    Spearman ρ of the expected holistic coverage. None when the judge gave no probability at all."""
    if all(row is None for row in p_rows) and all(c is None for c in weighted_coverages):
        return None
    flat = [
        (kind_of(cid), true, None if row is None else row.get(cid))
        for truth, row in zip(truth_rows, p_rows, strict=True)
        for cid, true in truth.items()
    ]
    auc = {"all": roc_auc([p for _, _, p in flat], [t for _, t, _ in flat])}
    for kind in KINDS:
        auc[kind] = roc_auc([p for k, _, p in flat if k == kind], [t for k, t, _ in flat if k == kind])
    threshold = choose_threshold([p for _, _, p in flat], [t for _, t, _ in flat])
    at_default = criteria_item_metrics(truth_rows, met_at(p_rows))["kinds"]
    at_threshold = None if threshold is None else criteria_item_metrics(truth_rows, met_at(p_rows, threshold.value))
    scored = sum(c is not None for c in weighted_coverages)
    return {
        "criteria_with_p": sum(p is not None for _, _, p in flat),
        "auc": auc,
        "threshold": None if threshold is None else threshold.to_record(),
        "at_default": at_default,
        "at_threshold": None if at_threshold is None else at_threshold["kinds"],
        "holistic": {
            "spearman": holistic_coverage_rank(true_coverages, weighted_coverages),
            "scored": scored,
            "no_verdict": len(true_coverages) - scored,
        },
    }


def claim_p_unsupported(reply: str, logprobs: Iterable[Any] | None) -> float | None:
    """P(``unsupported``) of a claim the judge may have split: the largest over its parts' labels
    (the plain label is ``unsupported`` when any part is, ``judge.calibration.claim_set``), each
    renormalised over the three labels (``judge.weighting.label_probabilities``); None when no
    part's label position can be read."""
    view = TokenView.of(reply, logprobs)
    spans = value_spans(view.text) if view is not None else None
    if view is None or spans is None:
        return None
    parts = []
    i = 0
    while ("claims", i, "label") in spans or ("claims", i, "claim") in spans:
        span = spans.get(("claims", i, "label"))
        probs = label_probabilities(view, span[0], CLAIM_LABELS) if span and isinstance(span[1], str) else None
        if probs is not None:
            parts.append(probs["unsupported"])
        i += 1
    return round(max(parts), 6) if parts else None


def weighted_claim_metrics(gold: Sequence[str], p_unsupported: Sequence[float | None]) -> dict[str, Any] | None:
    """The probability-weighted side of a claim calibration, beside the plain one, over the claims whose
    gold is supported or unsupported: AUC of P(unsupported), the Youden threshold, and P/R/F1 on
    ``unsupported`` with label = P ≥ 0.5 and P ≥ the threshold. None without any probability."""
    pairs = [(g == "unsupported", p) for g, p in zip(gold, p_unsupported, strict=True) if g != "not_sure"]
    if all(p is None for _, p in pairs):
        return None
    truth, probs = [t for t, _ in pairs], [p for _, p in pairs]
    threshold = choose_threshold(probs, truth)

    def at(cut: float) -> dict[str, Any]:
        said = [(t, p >= cut) for t, p in pairs if p is not None]
        tp = sum(t and s for t, s in said)
        fp = sum(s and not t for t, s in said)
        fn = sum(t and not s for t, s in said)
        return {
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "precision": tp / (tp + fp) if tp + fp else None,
            "recall": tp / (tp + fn) if tp + fn else None,
            "f1": 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else None,
        }

    return {
        "claims_with_p": sum(p is not None for p in probs),
        "auc": roc_auc(probs, truth),
        "threshold": None if threshold is None else threshold.to_record(),
        "at_default": at(DEFAULT_THRESHOLD),
        "at_threshold": None if threshold is None else at(threshold.value),
    }
