"""A calibration set for criteria grading whose truth is known by construction, and its metrics.

Each answer is composed from the item's own criteria: every expected topic and every required
warning is put in with probability ``INCLUDE_PROBABILITY`` (0.5), and every ``FORBIDDEN_EVERY``-th
answer of an item (the 3rd, 6th …) also states one of its forbidden statements, chosen at random.
A criterion goes in as its gold text, verbatim, as one sentence; the sentences are shuffled and
framed by a neutral opening and closing sentence (no clinical content). So, for every criterion:

    truth[id] = its text is in the answer                (topic covered, warning stated, forbidden said)
    true_coverage = topics put in / topics

A criterion left out whose text still occurs inside one that was put in ("不可自行停药" within
"不可自行停药（停药反弹…）") has no clear truth and is left out of ``truth``. Randomness comes from
``random.Random`` seeded by (seed, item id): the same seed gives the same set, and an item's
answers do not change when other items are added or removed. The set tests recognition of the
criterion's own words; paraphrase is beyond it, and a forbidden entry that names a kind of content
("给出具体药物组合") rather than a statement is put in as those words all the same.

Metrics, per kind (topic, warning, forbidden), positive class = met (for forbidden: said), over the
criteria that have a truth and a judgement::

    precision = TP / (TP + FP)    recall = TP / (TP + FN)    F1 = 2·TP / (2·TP + FP + FN)

(each None when its denominator is 0). A criterion without a judgement (no verdict for the answer,
or the verdict left its id out) is counted as ``no_verdict`` and left out of every rate, as in
``judge.calibration.claim_set``; ``coverage`` = judged / criteria. ``holistic_coverage_rank`` is the
Spearman ρ between the true coverage and the holistic judge's coverage score of the same answers.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from scipy.stats import spearmanr

from eval.items import Item
from judge.contracts.criteria_items import KINDS, criteria_ids, kind_of

PER_ITEM = 3
INCLUDE_PROBABILITY = 0.5
FORBIDDEN_EVERY = 3
RANK_MIN_PAIRS = 5
# Neutral sentences that open and close an answer: no clinical content, no advice to see a doctor.
NEUTRAL_OPENINGS: tuple[str, ...] = ("以下是对该问题的简要说明。", "这个问题可以从几个方面来看。", "下面分几点来谈。")
NEUTRAL_CLOSINGS: tuple[str, ...] = ("以上就是主要内容。", "感谢您的提问。", "希望这些信息对您有所帮助。")
_SENTENCE_END = tuple("。！？!?.；;")


@dataclass(frozen=True)
class CriteriaCalibrationAnswer:
    """One synthetic answer to a criteria item; ``truth`` maps criterion id → met (forbidden: said)."""

    id: str
    item_id: str
    text: str
    truth: Mapping[str, bool] = field(hash=False)
    true_coverage: float

    def to_record(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "item_id": self.item_id,
            "text": self.text,
            "truth": dict(self.truth),
            "true_coverage": self.true_coverage,
        }


@dataclass(frozen=True)
class CriteriaCalibrationSet:
    answers: tuple[CriteriaCalibrationAnswer, ...]
    sha256: str  # of the canonical JSON of the answers: two calibrations compare only on the same set


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith(_SENTENCE_END) else f"{text}。"


def _neutral(pool: Sequence[str], criteria: Sequence[str], rng: random.Random) -> str:
    """A sentence of ``pool`` holding no criterion's text ('' if every one does)."""
    usable = [sentence for sentence in pool if not any(text in sentence for text in criteria)]
    return rng.choice(usable) if usable else ""


def _answer(item: Item, number: int, rng: random.Random) -> CriteriaCalibrationAnswer:
    rows = criteria_ids(item.gold)
    chosen = [row for row in rows if row[1] != "forbidden" and rng.random() < INCLUDE_PROBABILITY]
    forbidden = [row for row in rows if row[1] == "forbidden"]
    if forbidden and number % FORBIDDEN_EVERY == 0:
        chosen.append(rng.choice(forbidden))
    rng.shuffle(chosen)
    opening, closing = (
        _neutral(pool, [text for _, _, text in rows], rng) for pool in (NEUTRAL_OPENINGS, NEUTRAL_CLOSINGS)
    )
    body = "\n".join(s for s in (opening, *(_sentence(text) for _, _, text in chosen), closing) if s)
    put_in = {criterion_id for criterion_id, _, _ in chosen}
    truth = {
        criterion_id: criterion_id in put_in
        for criterion_id, _, text in rows
        if criterion_id in put_in or text not in body
    }
    topics = [criterion_id for criterion_id, kind, _ in rows if kind == "topic"]
    return CriteriaCalibrationAnswer(
        id=f"{item.id}#{number}",
        item_id=item.id,
        text=body,
        truth=MappingProxyType(truth),
        true_coverage=sum(t in put_in for t in topics) / len(topics),
    )


def criteria_calibration_set(
    items: Sequence[Item], per_item: int = PER_ITEM, max_items: int | None = None, seed: int = 0
) -> CriteriaCalibrationSet:
    """``per_item`` answers for each criteria item (all, or ``max_items`` drawn with ``seed``), in item order.

    Items of other gold types are passed over; ValueError when no criteria item is left.
    """
    if per_item < 1:
        raise ValueError(f"per_item must be at least 1, got {per_item}")
    pool = [item for item in items if item.gold_type == "criteria" and item.scorable]
    if not pool:
        raise ValueError("no scorable criteria items to build answers from")
    if max_items is not None and max_items < len(pool):
        if max_items < 1:
            raise ValueError(f"max_items must be at least 1, got {max_items}")
        keep = sorted(random.Random(seed).sample(range(len(pool)), max_items))
        pool = [pool[index] for index in keep]
    answers: list[CriteriaCalibrationAnswer] = []
    for item in pool:
        rng = random.Random(f"{seed}/{item.id}")
        answers += [_answer(item, number, rng) for number in range(1, per_item + 1)]
    blob = json.dumps([a.to_record() for a in answers], ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return CriteriaCalibrationSet(tuple(answers), hashlib.sha256(blob.encode("utf-8")).hexdigest())


def _ratio(numerator: int, denominator: int) -> float | None:
    return numerator / denominator if denominator else None


def criteria_item_metrics(
    truth_rows: Sequence[Mapping[str, bool]], predicted_rows: Sequence[Mapping[str, bool] | None]
) -> dict[str, Any]:
    """Per-kind P/R/F1 of the judge's met/said against the truth (formulas: module doc).

    ``predicted_rows[i]`` is the judge's ``{id: met}`` for answer i (``CriteriaItemsVerdict.met_by_id``),
    or None when it gave no verdict. Predicted ids without a truth are ignored.
    """
    if len(truth_rows) != len(predicted_rows):
        raise ValueError(f"truth and predicted rows differ in length ({len(truth_rows)} vs {len(predicted_rows)})")
    tallies = {kind: {"n": 0, "no_verdict": 0, "tp": 0, "fp": 0, "fn": 0, "tn": 0} for kind in KINDS}
    for truth, predicted in zip(truth_rows, predicted_rows, strict=False):
        for criterion_id, true in truth.items():
            tally = tallies[kind_of(criterion_id)]
            tally["n"] += 1
            said = None if predicted is None else predicted.get(criterion_id)
            if said is None:
                tally["no_verdict"] += 1
                continue
            tally[("tp" if said else "fn") if true else ("fp" if said else "tn")] += 1
    kinds: dict[str, Any] = {}
    for kind, t in tallies.items():
        judged = t["n"] - t["no_verdict"]
        tp, fp, fn = t["tp"], t["fp"], t["fn"]
        kinds[kind] = {
            **t,
            "judged": judged,
            "coverage": _ratio(judged, t["n"]),
            "precision": _ratio(tp, tp + fp),
            "recall": _ratio(tp, tp + fn),
            "f1": _ratio(2 * tp, 2 * tp + fp + fn),
            "accuracy": _ratio(tp + t["tn"], judged),
        }
    with_verdict = sum(p is not None for p in predicted_rows)
    return {
        "answers": len(truth_rows),
        "answers_judged": with_verdict,
        "answers_no_verdict": len(truth_rows) - with_verdict,
        "kinds": kinds,
    }


def holistic_coverage_rank(
    true_coverages: Sequence[float], judge_coverage_scores: Sequence[float | None]
) -> float | None:
    """Spearman ρ of true coverage vs the holistic judge's coverage score, over answers it scored.

    None with fewer than ``RANK_MIN_PAIRS`` (5) scored answers or when either side is constant
    (ρ is undefined then).
    """
    if len(true_coverages) != len(judge_coverage_scores):
        raise ValueError(
            f"true and judged coverages differ in length ({len(true_coverages)} vs {len(judge_coverage_scores)})"
        )
    pairs = [
        (float(t), float(j))
        for t, j in zip(true_coverages, judge_coverage_scores, strict=False)
        if j is not None and not math.isnan(float(j))
    ]
    if len(pairs) < RANK_MIN_PAIRS or len({t for t, _ in pairs}) < 2 or len({j for _, j in pairs}) < 2:
        return None
    rho = float(spearmanr([t for t, _ in pairs], [j for _, j in pairs]).statistic)
    return None if math.isnan(rho) else rho
