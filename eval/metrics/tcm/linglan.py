"""LingLan metric families for open clinical labels, multi-choice, extraction and doses.

From ``../shared/seeds/linglan-methodology.txt``: character-level F1 for cloze answers, DTR-F1
(synonym-tolerant bipartite F1) for open labels, option-level scoring for multi-choice, multiset
P/R/F1 for extraction and cosine + MAE for herb doses. Each function scores ONE instance; the
task score is the mean over instances (``macro_mean``).
"""

from __future__ import annotations

import math
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from eval._checks import (
    f1_from_counts,
    require_int,
    require_mapping,
    require_real,
    require_sequence,
    require_str,
    require_str_collection,
    require_str_sequence,
)
from eval.encoders.vectors import Encoder, checked_vectors, cosine_matrix


def char_f1(pred: str, gold: str) -> float:
    """Character-multiset F1: TP = Σ_c min(n_pred(c), n_gold(c)); P = TP/|pred|, R = TP/|gold|.

    0.0 when TP = 0 (including empty strings), as in the methodology's reference code. Computed as
    2·TP/(|pred| + |gold|), which equals 2PR/(P + R), so the scalar and matrix forms agree exactly.
    """
    require_str("pred", pred)
    require_str("gold", gold)
    tp = sum((Counter(pred) & Counter(gold)).values())
    return 2 * tp / (len(pred) + len(gold)) if tp else 0.0


def char_f1_matrix(predicted: Sequence[str], gold: Sequence[str]) -> np.ndarray:
    """char_f1 for every (predicted[i], gold[j]) pair at once, as an (n, m) float array."""
    alphabet: dict[str, int] = {}
    encoded = []
    for label in (*predicted, *gold):
        counts = Counter(label)
        encoded.append({alphabet.setdefault(char, len(alphabet)): count for char, count in counts.items()})
    matrix = np.zeros((len(encoded), max(len(alphabet), 1)), dtype=np.int32)
    for row, counts in enumerate(encoded):
        for column, count in counts.items():
            matrix[row, column] = count
    pred_counts, gold_counts = matrix[: len(predicted)], matrix[len(predicted) :]
    tp = np.minimum(pred_counts[:, None, :], gold_counts[None, :, :]).sum(axis=2)
    lengths = pred_counts.sum(axis=1)[:, None] + gold_counts.sum(axis=1)[None, :]
    return np.divide(2.0 * tp, lengths, out=np.zeros(tp.shape), where=tp > 0)


def dtr_f1(predicted: Sequence[str], gold: Sequence[str], tau: float = 0.7) -> dict[str, float]:
    """DTR-F1: TP = size of a maximum-cardinality one-to-one matching between predicted and gold
    labels over edges with char_f1 ≥ tau; FP = |pred| − TP, FN = |gold| − TP; F1 = 2PR/(P + R).

    Labels are a multiset (a repeated prediction can match only one gold). Both lists empty gives
    P = R = F1 = 1.0; exactly one empty gives 0.0 (an unparsed answer is a full miss).
    """
    require_str_sequence("predicted", predicted)
    require_str_sequence("gold", gold)
    threshold = require_real("tau", tau, low=0.0, high=1.0)
    return _matched_scores(len(predicted), len(gold), lambda: char_f1_matrix(predicted, gold) >= threshold)


def _matched_scores(n: int, m: int, edges: Callable[[], np.ndarray]) -> dict[str, float]:
    """DTR counts from the (n, m) boolean edge matrix ``edges()`` (called only when n and m are > 0):
    TP = maximum-cardinality one-to-one matching, FP = n − TP, FN = m − TP; both empty is 1.0."""
    if n == 0 and m == 0:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0, "tp": 0, "fp": 0, "fn": 0}
    tp = 0
    if n and m:
        allowed = edges()
        if allowed.any():
            # imported here: scipy.sparse costs ~25 MB of RSS, and most runs score no DTR item
            from scipy.sparse import csr_matrix
            from scipy.sparse.csgraph import maximum_bipartite_matching

            matched = maximum_bipartite_matching(csr_matrix(allowed), perm_type="column")
            tp = int((matched >= 0).sum())
    precision, recall, f1 = f1_from_counts(tp, n, m)
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": n - tp, "fn": m - tp}


def dtr_f1_embedding(predicted: Sequence[str], gold: Sequence[str], encode: Encoder, *, tau: float) -> dict[str, float]:
    """DTR-F1 with embedding cosine ≥ tau as the edge rule instead of char_f1 ≥ tau; matching and counts
    are ``dtr_f1``'s. For synonyms that share no characters (心悸 / 心慌: char-F1 0.5).

    ``encode`` is called once with predicted + gold. ``tau`` has no default: cosines are on each
    encoder's own scale, so calibrate it on known synonyms and near-misses for the encoder you use.
    """
    require_str_sequence("predicted", predicted)
    require_str_sequence("gold", gold)
    threshold = require_real("tau", tau, low=-1.0, high=1.0)

    def edges() -> np.ndarray:
        texts = [*predicted, *gold]
        vectors = checked_vectors(encode(texts), len(texts), "encode")
        return cosine_matrix(vectors[: len(predicted)], vectors[len(predicted) :]) >= threshold

    return _matched_scores(len(predicted), len(gold), edges)


def multi_choice_score(pred: Iterable[str], gold: Iterable[str]) -> dict[str, float]:
    """One multi-choice instance: exact = 1.0 iff the chosen option set equals the gold set;
    option-level P = |P∩G|/|P|, R = |P∩G|/|G|, F1 = 2PR/(P + R) (all 1.0 when both sets are empty)."""
    chosen = set(require_str_collection("pred", pred))
    correct = set(require_str_collection("gold", gold))
    if not chosen and not correct:
        return {"exact": 1.0, "precision": 1.0, "recall": 1.0, "f1": 1.0}
    precision, recall, f1 = f1_from_counts(len(chosen & correct), len(chosen), len(correct))
    return {"exact": float(chosen == correct), "precision": precision, "recall": recall, "f1": f1}


def multi_choice_scores(preds: Sequence[Iterable[str]], golds: Sequence[Iterable[str]]) -> dict[str, float]:
    """A multi-choice task: instance accuracy = mean exact-set match; option-level P/R/F1 micro-averaged
    over all (instance, option) decisions, so every chosen or required option weighs the same."""
    require_sequence("preds", preds)
    require_sequence("golds", golds)
    if len(preds) != len(golds):
        raise ValueError(f"preds and golds must have the same length, got {len(preds)} and {len(golds)}")
    if not golds:
        raise ValueError("golds must not be empty")
    exact = tp = chosen_total = correct_total = 0
    for index, (pred, gold) in enumerate(zip(preds, golds, strict=True)):
        chosen = set(require_str_collection(f"preds[{index}]", pred))
        correct = set(require_str_collection(f"golds[{index}]", gold))
        exact += chosen == correct
        tp += len(chosen & correct)
        chosen_total += len(chosen)
        correct_total += len(correct)
    precision, recall, f1 = f1_from_counts(tp, chosen_total, correct_total)
    return {
        "instance_accuracy": exact / len(golds),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "n": len(golds),
    }


_EDGE_PUNCTUATION = string.punctuation + "，。、；：？！“”‘’（）《》【】…—·"


def normalize_entity(text: str) -> str:
    """Normalised surface form for extraction matching: NFKC (full-width → half-width), casefold,
    all whitespace removed, punctuation stripped from both ends."""
    folded = unicodedata.normalize("NFKC", require_str("text", text)).casefold()
    return "".join(folded.split()).strip(_EDGE_PUNCTUATION)


def _entity_counts(name: str, entities: Sequence[Any]) -> Counter[tuple[str, str]]:
    """Multiset of (type, normalised form) from {"entity", "type", "count"?} dicts or (type, entity) pairs."""
    require_sequence(name, entities)
    counts: Counter[tuple[str, str]] = Counter()
    for index, entity in enumerate(entities):
        where = f"{name}[{index}]"
        if isinstance(entity, Mapping):
            if "entity" not in entity or "type" not in entity:
                raise ValueError(f"{where} needs 'entity' and 'type' keys")
            kind, text = entity["type"], entity["entity"]
            count = require_int(f"{where}['count']", entity.get("count", 1), minimum=1)
        else:
            require_sequence(where, entity)
            if len(entity) != 2:
                raise ValueError(f"{where} must be (type, entity) or a dict, got {len(entity)} values")
            kind, text = entity
            count = 1
        counts[(require_str(f"{where} type", kind).strip(), normalize_entity(text))] += count
    return counts


def extraction_prf(predicted: Sequence[Any], gold: Sequence[Any]) -> dict[str, float]:
    """Instance-level multiset extraction score over (type, normalised form) with multiplicity:
    TP = Σ min(count_pred, count_gold); P = TP/|pred|, R = TP/|gold|, F1 = 2PR/(P + R).

    Both empty gives 1.0; an empty prediction against a non-empty gold is TP = FP = 0, FN = |gold|.
    """
    pred_counts = _entity_counts("predicted", predicted)
    gold_counts = _entity_counts("gold", gold)
    pred_total, gold_total = sum(pred_counts.values()), sum(gold_counts.values())
    if pred_total == 0 and gold_total == 0:
        return {"precision": 1.0, "recall": 1.0, "f1": 1.0, "tp": 0, "fp": 0, "fn": 0}
    tp = sum((pred_counts & gold_counts).values())
    precision, recall, f1 = f1_from_counts(tp, pred_total, gold_total)
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": pred_total - tp, "fn": gold_total - tp}


def _dose_vector(name: str, doses: Any) -> dict[str, float]:
    """{normalised herb: grams} from a {herb: grams} mapping or a list of {"herb", "dose_grams"} dicts."""
    if isinstance(doses, Mapping):
        pairs = list(doses.items())
    else:
        pairs = []
        for index, entry in enumerate(require_sequence(name, doses)):
            require_mapping(f"{name}[{index}]", entry)
            if "herb" not in entry or "dose_grams" not in entry:
                raise ValueError(f"{name}[{index}] needs 'herb' and 'dose_grams' keys")
            pairs.append((entry["herb"], entry["dose_grams"]))
    vector: dict[str, float] = {}
    for herb, grams in pairs:
        key = normalize_entity(require_str(f"{name} herb", herb))
        if key in vector:
            raise ValueError(f"{name}: herb {herb!r} appears twice; merge its doses first")
        vector[key] = require_real(f"{name}[{herb!r}] dose", grams, low=0.0)
    return vector


def dose_score(predicted: Any, gold: Any) -> dict[str, Any]:
    """Quantitative dose scoring: cosine similarity of the dose vectors aligned on the union of herbs
    (a missing herb counts 0 g) and MAE in grams over the herbs both name.

    Returns {"cosine", "mae" (None when no herb is shared), "shared": number of shared herbs}.
    An empty gold is an error: the methodology skips such items.
    """
    pred_vector = _dose_vector("predicted", predicted)
    gold_vector = _dose_vector("gold", gold)
    if not gold_vector:
        raise ValueError("gold has no herbs: skip this item (LingLan skips empty gold annotations)")
    herbs = sorted(pred_vector.keys() | gold_vector.keys())
    p = np.array([pred_vector.get(h, 0.0) for h in herbs])
    g = np.array([gold_vector.get(h, 0.0) for h in herbs])
    norms = float(np.linalg.norm(p) * np.linalg.norm(g))
    cosine = float(p @ g) / norms if norms > 0 else 0.0
    shared = sorted(pred_vector.keys() & gold_vector.keys())
    mae = sum(abs(pred_vector[h] - gold_vector[h]) for h in shared) / len(shared) if shared else None
    return {"cosine": min(cosine, 1.0), "mae": mae, "shared": len(shared)}


def macro_mean(scores: Iterable[Mapping[str, Any]], key: str) -> float:
    """Mean of ``key`` over per-instance score dicts (LingLan computes per-task scores this way)."""
    values = [require_real(f"scores[{i}][{key!r}]", s[key]) for i, s in enumerate(scores)]
    if not values:
        raise ValueError("no scores to average")
    return math.fsum(values) / len(values)
