"""Answer-overlap metrics for English-style text: exact match, token F1, ROUGE-L, n-gram precision.

Catalogue items 1–6 (``../shared/seeds/eval-functions-catalogue.txt``), implemented to the letter.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from eval._checks import require_int, require_same_length, require_sequence, require_str, require_str_sequence
from eval.metrics.text.sequence import lcs_length
from eval.metrics.text.tokens import lower_tokens, ngrams, squad_tokens


def normalize_answer(text: str) -> str:
    """Lowercase, delete string.punctuation, split on whitespace, drop a/an/the, join with one space."""
    return " ".join(squad_tokens(require_str("text", text)))


def exact_match(predictions: list[str], answers: list[list[str]]) -> float:
    """Mean over predictions of 1 if normalize(prediction) equals any normalized accepted answer.

    ``answers[i]`` is the list of accepted strings for ``predictions[i]``; 0.0 with no predictions.
    """
    require_str_sequence("predictions", predictions)
    require_sequence("answers", answers)
    require_same_length("predictions", predictions, "answers", answers)
    if not predictions:
        return 0.0
    hits = 0
    for i, (prediction, accepted) in enumerate(zip(predictions, answers, strict=True)):
        require_str_sequence(f"answers[{i}]", accepted)
        target = normalize_answer(prediction)
        hits += any(normalize_answer(a) == target for a in accepted)
    return hits / len(predictions)


def _multiset_f1(pred: list[str], ref: list[str]) -> float:
    """F1 of two token multisets: both empty 1.0; either empty or no overlap 0.0; else 2PR/(P+R)."""
    if not pred and not ref:
        return 1.0
    if not pred or not ref:
        return 0.0
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1: common = Σ_t min(count_pred(t), count_ref(t)); P = common/|pred|, R = common/|ref|."""
    require_str("prediction", prediction)
    require_str("reference", reference)
    return _multiset_f1(squad_tokens(prediction), squad_tokens(reference))


def best_f1(prediction: str, references: list[str]) -> list[Any]:
    """[best F1, index] over references on lowercased whitespace tokens; ties to the earliest index.

    With no references: [0.0, -1].
    """
    tokens = lower_tokens(require_str("prediction", prediction))
    require_str_sequence("references", references)
    best, best_index = 0.0, -1
    for index, reference in enumerate(references):
        score = _multiset_f1(tokens, lower_tokens(reference))
        if best_index == -1 or score > best:
            best, best_index = score, index
    return [best, best_index]


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F on lowercased whitespace tokens: L = LCS; P = L/|cand|, R = L/|ref|; 0.0 when L = 0."""
    cand = lower_tokens(require_str("candidate", candidate))
    ref = lower_tokens(require_str("reference", reference))
    common = lcs_length(cand, ref)
    if common == 0:
        return 0.0
    precision, recall = common / len(cand), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def ngram_precision(candidate: str, references: list[str], n: int) -> float:
    """Clipped n-gram precision: Σ_g min(count_cand(g), max_ref count_ref(g)) / #candidate n-grams.

    0.0 when the candidate has fewer than n tokens.
    """
    require_int("n", n, minimum=1)
    cand_grams = ngrams(lower_tokens(require_str("candidate", candidate)), n)
    require_str_sequence("references", references)
    if not cand_grams:
        return 0.0
    max_ref_counts: Counter[tuple[str, ...]] = Counter()
    for reference in references:
        max_ref_counts |= Counter(ngrams(lower_tokens(reference), n))  # | keeps the per-gram maximum
    clipped = sum(min(count, max_ref_counts[gram]) for gram, count in Counter(cand_grams).items())
    return clipped / len(cand_grams)
