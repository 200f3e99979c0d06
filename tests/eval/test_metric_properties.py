"""Property tests (hypothesis) for the metrics: bounds, symmetry, reference equivalence, invariants."""

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_bipartite_matching

from eval import (
    best_f1,
    calibration_error,
    char_f1,
    char_f1_matrix,
    chip_choice_score,
    dtr_f1,
    elo_ratings,
    hard_subset,
    macro_f1,
    mean_pass_at_k,
    ngram_precision,
    rouge_l,
    rouge_l_chars,
    token_f1,
)
from eval.metrics.text.sequence import lcs_length, lcs_length_dp

WORDS = st.sampled_from(["a", "the", "cat", "Cat", "sat", "mat", "on", "dog", "x,", "y."])
TEXT = st.lists(WORDS, max_size=12).map(" ".join)
TCM_CHARS = st.text(alphabet="气血阴阳虚实寒热肝脾肾心肺郁瘀痰湿证", max_size=6)
LABELS = st.lists(TCM_CHARS, max_size=6)


@given(TEXT, TEXT)
def test_token_f1_bounds_and_symmetry(a, b):
    value = token_f1(a, b)
    assert 0.0 <= value <= 1.0
    assert value == pytest.approx(token_f1(b, a))


@given(TEXT, TEXT)
def test_rouge_l_bounds_symmetry(a, b):
    value = rouge_l(a, b)
    assert 0.0 <= value <= 1.0
    assert value == pytest.approx(rouge_l(b, a))


@given(st.lists(st.sampled_from("abcde"), max_size=40), st.lists(st.sampled_from("abcde"), max_size=40))
def test_bit_parallel_lcs_equals_dynamic_programme(a, b):
    assert lcs_length(a, b) == lcs_length_dp(a, b)


@given(st.text(max_size=30), st.text(max_size=30))
def test_rouge_l_chars_bounds(a, b):
    assert 0.0 <= rouge_l_chars(a, b) <= 1.0


@given(TEXT, st.lists(TEXT, max_size=4))
def test_best_f1_is_max(prediction, references):
    best, index = best_f1(prediction, references)
    if not references:
        assert [best, index] == [0.0, -1]
    else:
        assert 0 <= index < len(references)
        assert 0.0 <= best <= 1.0


@given(TEXT, st.lists(TEXT, max_size=3), st.integers(1, 3))
def test_ngram_precision_bounds(candidate, references, n):
    assert 0.0 <= ngram_precision(candidate, references, n) <= 1.0


@given(TCM_CHARS, TCM_CHARS)
def test_char_f1_bounds_symmetry(a, b):
    value = char_f1(a, b)
    assert 0.0 <= value <= 1.0
    assert value == char_f1(b, a)
    if a and a == b:
        assert value == 1.0


@given(LABELS, LABELS)
def test_char_f1_matrix_matches_scalar(predicted, gold):
    matrix = char_f1_matrix(predicted, gold)
    assert matrix.shape == (len(predicted), len(gold))
    for i, p in enumerate(predicted):
        for j, g in enumerate(gold):
            assert matrix[i, j] == char_f1(p, g)


@given(LABELS, LABELS, st.sampled_from([0.0, 0.3, 0.5, 0.7, 0.9, 1.0]))
def test_dtr_tp_is_scipy_maximum_matching(predicted, gold, tau):
    out = dtr_f1(predicted, gold, tau)
    edges = np.array([[char_f1(p, g) >= tau for g in gold] for p in predicted], dtype=bool).reshape(
        len(predicted), len(gold)
    )
    expected = int((maximum_bipartite_matching(csr_matrix(edges), perm_type="column") >= 0).sum()) if edges.size else 0
    assert out["tp"] == expected
    assert out["tp"] + out["fp"] == len(predicted) and out["tp"] + out["fn"] == len(gold)
    for key in ("precision", "recall", "f1"):
        assert 0.0 <= out[key] <= 1.0
    swapped = dtr_f1(gold, predicted, tau)
    assert swapped["tp"] == out["tp"] and swapped["f1"] == pytest.approx(out["f1"])


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30)), min_size=1, max_size=5))
def test_pass_at_k_monotone_in_c(pairs):
    results = [[max(n, c), min(n, c)] for n, c in pairs]
    for k in (1, 2, 5):
        base = mean_pass_at_k(results, k)
        assert 0.0 <= base <= 1.0
        for index, (n, c) in enumerate(results):
            if c < n:
                bumped = [list(r) for r in results]
                bumped[index][1] = c + 1
                assert mean_pass_at_k(bumped, k) >= base - 1e-12


@given(
    st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("abcd"), st.sampled_from([0, 0.5, 1])), max_size=40),
    st.sampled_from([4, 16, 32]),
)
def test_elo_conserves_total_rating(matches, k):
    ratings = elo_ratings([list(m) for m in matches], k)
    assert math.isclose(sum(ratings.values()), 1000.0 * len(ratings), abs_tol=1e-6)


@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), max_size=30), st.integers(1, 10))
def test_calibration_error_bounds(pairs, bins):
    value = calibration_error([c for c, _ in pairs], [o for _, o in pairs], bins)
    assert 0.0 <= value <= 1.0 + 1e-12


@given(st.lists(st.tuples(st.sampled_from("ABCDE"), st.sampled_from("ABCDE")), min_size=1, max_size=40))
def test_macro_f1_equals_the_tcm_sd_recipe(pairs):
    preds, golds = [p for p, _ in pairs], [g for _, g in pairs]
    labels = sorted(set(preds) | set(golds))
    acc = sum(p == g for p, g in pairs) / len(golds)
    f1s = []
    for c in labels:
        tp = sum(p == c and g == c for p, g in pairs)
        fp = sum(p == c and g != c for p, g in pairs)
        fn = sum(p != c and g == c for p, g in pairs)
        prec = tp / (tp + fp) if tp + fp else 0
        rec = tp / (tp + fn) if tp + fn else 0
        f1s.append(2 * prec * rec / (prec + rec) if prec + rec else 0)
    out = macro_f1(preds, golds)
    assert out["accuracy"] == pytest.approx(acc)
    assert out["macro_f1"] == pytest.approx(sum(f1s) / len(labels))
    assert 0.0 <= out["macro_f1"] <= 1.0


@given(st.sets(st.sampled_from("ABCDEFGHIJ")), st.sets(st.sampled_from("ABCDEFGHIJ"), min_size=1))
def test_chip_choice_bounds(pred, gold):
    value = chip_choice_score(pred, gold)
    assert 0.0 <= value <= 1.0
    assert (value == 1.0) == (pred == gold)


@settings(max_examples=50)
@given(
    st.lists(st.lists(st.sampled_from([0.0, 1.0]), min_size=3, max_size=3), min_size=1, max_size=30), st.integers(0, 35)
)
def test_hard_subset_picks_highest_difficulty_stably(rows, top_k):
    ids = list(range(len(rows)))
    chosen = hard_subset(ids, rows, top_k)
    matrix = np.array(rows)
    difficulty = (1 - matrix.mean(axis=1)) + 0.5 * matrix.var(axis=1)
    expected = sorted(ids, key=lambda i: (-difficulty[i], i))[:top_k]
    assert chosen == expected
    assert len(chosen) == min(top_k, len(rows))
    assert Counter(chosen) == Counter(set(chosen))
