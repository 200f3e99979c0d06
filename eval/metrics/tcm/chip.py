"""CHIP TCM syndrome-differentiation scoring (``../shared/seeds/chip-tcm-syndrome-task.txt`` §5).

Four sub-tasks asked in order: P1 clinical-information extraction, P2 pathogenesis multi-choice,
P3 syndrome multi-choice, P4 explanation summary (ROUGE-L over characters); total
P = 0.2·P1 + 0.3·P2 + 0.4·P3 + 0.1·P4. The submission reader/writer lives in ``eval.metrics.tcm.chip_format``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from eval._checks import require_real, require_str, require_str_collection, require_str_sequence
from eval.metrics.text.sequence import lcs_length

CHIP_WEIGHTS = (0.2, 0.3, 0.4, 0.1)


def chip_extraction_score(pred: Collection[str], gold: Sequence[str]) -> float:
    """P1 = (gold items found verbatim among the predicted items) / (number of gold items).

    "Verbatim" is whole-item equality, as the task document's worked example (§5.1, case 3) requires:
    gold 紧张 is not found in a prediction that says 精神紧张, which is why that case scores 5/6.
    """
    predicted = set(require_str_collection("pred", pred))
    require_str_sequence("gold", gold)
    if not gold:
        raise ValueError("gold has no items: P1 is undefined (the task divides by the gold count)")
    return sum(item in predicted for item in gold) / len(gold)


def chip_choice_score(pred: Collection[str], gold: Collection[str]) -> float:
    """P2/P3 proportional multi-choice score = |P ∩ G| / (|G| + |P − G|) for option sets P and G.

    The denominator is zero only when P and G are both empty: 0/0 has no value, so that raises
    ValueError. An empty G with a non-empty P is an ordinary case: 0 / (0 + |P|) = 0.0.
    """
    chosen = set(require_str_collection("pred", pred))
    correct = set(require_str_collection("gold", gold))
    denominator = len(correct) + len(chosen - correct)
    if denominator == 0:
        raise ValueError(
            "pred and gold are both empty: the score 0/(|G| + |P − G|) = 0/0 is undefined; "
            "an item needs at least one gold option"
        )
    return len(chosen & correct) / denominator


def rouge_l_chars(candidate: str, reference: str) -> float:
    """P4: ROUGE-L F over characters. L = LCS of the two character sequences (whitespace dropped,
    nothing else normalised); P = L/|candidate|, R = L/|reference|, F = 2PR/(P + R); 0.0 when L = 0."""
    cand = "".join(require_str("candidate", candidate).split())
    ref = "".join(require_str("reference", reference).split())
    common = lcs_length(cand, ref)
    if common == 0:
        return 0.0
    precision, recall = common / len(cand), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def chip_total(p1: float, p2: float, p3: float, p4: float) -> float:
    """P = 0.2·P1 + 0.3·P2 + 0.4·P3 + 0.1·P4, each sub-score in [0, 1]."""
    scores = [
        require_real(name, value, low=0.0, high=1.0)
        for name, value in zip(("p1", "p2", "p3", "p4"), (p1, p2, p3, p4), strict=True)
    ]
    return sum(weight * score for weight, score in zip(CHIP_WEIGHTS, scores, strict=True))
