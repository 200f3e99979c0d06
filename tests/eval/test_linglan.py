"""LingLan metric families and hard subsets: the methodology's worked examples and edge rules."""

import numpy as np
import pytest

from eval import (
    char_f1,
    composite_difficulty,
    dose_score,
    dtr_f1,
    extraction_prf,
    hard_subset,
    macro_mean,
    multi_choice_score,
    multi_choice_scores,
    normalize_entity,
)


class TestCharF1:
    def test_seed_examples(self):
        # methodology example 1: 气滞血瘀 vs 气滞血瘀证 ≈ 0.89; 肝气郁结 vs 气滞血瘀 = 0.25
        assert char_f1("气滞血瘀", "气滞血瘀证") == pytest.approx(8 / 9)
        assert char_f1("肝气郁结", "气滞血瘀") == pytest.approx(0.25)

    def test_multiset(self):
        # pred 阴阴虚 vs gold 阴虚: TP=2, FP=1 -> P=2/3, R=1
        assert char_f1("阴阴虚", "阴虚") == pytest.approx(0.8)

    def test_empty(self):
        assert char_f1("", "") == 0.0
        assert char_f1("a", "") == 0.0

    def test_types(self):
        with pytest.raises(TypeError):
            char_f1(["a"], "a")


class TestDtrF1:
    def test_synonym_tolerance(self):
        out = dtr_f1(["气滞血瘀", "肝气郁结"], ["气滞血瘀证"])
        assert out == {"precision": 0.5, "recall": 1.0, "f1": pytest.approx(2 / 3), "tp": 1, "fp": 1, "fn": 0}

    def test_maximum_cardinality_not_greedy(self):
        # p0 = 肝郁脾虚 matches g0 exactly (1.0) and g1 = 肝郁脾弱 (0.75); p1 = 肝郁气虚 matches only g0 (0.75).
        # Greedy best-edge-first takes p0-g0 and strands p1 (tp = 1); the maximum matching has tp = 2.
        predicted = ["肝郁脾虚", "肝郁气虚"]
        gold = ["肝郁脾虚", "肝郁脾弱"]
        assert char_f1("肝郁脾虚", "肝郁脾弱") == 0.75
        assert char_f1("肝郁气虚", "肝郁脾虚") == 0.75
        assert char_f1("肝郁气虚", "肝郁脾弱") == 0.5
        assert dtr_f1(predicted, gold) == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "tp": 2, "fp": 0, "fn": 0}

    def test_one_to_one(self):
        out = dtr_f1(["气虚", "气虚", "气虚"], ["气虚"])
        assert (out["tp"], out["fp"], out["fn"]) == (1, 2, 0)

    def test_threshold_inclusive(self):
        # char_f1("ab", "abc") = 0.8 exactly: an edge at tau = 0.8, none above
        assert dtr_f1(["ab"], ["abc"], tau=0.8)["tp"] == 1
        assert dtr_f1(["ab"], ["abc"], tau=0.81)["tp"] == 0

    def test_empty_rules(self):
        assert dtr_f1([], [])["f1"] == 1.0
        assert dtr_f1([], ["a"]) == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0, "fp": 0, "fn": 1}
        assert dtr_f1(["a"], []) == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "tp": 0, "fp": 1, "fn": 0}

    def test_bad_input(self):
        with pytest.raises(TypeError):
            dtr_f1("气虚", ["气虚"])
        with pytest.raises(ValueError):
            dtr_f1(["a"], ["a"], tau=1.5)


class TestMultiChoice:
    def test_instance(self):
        assert multi_choice_score({"B", "C", "H", "I"}, {"B", "C", "D"}) == {
            "exact": 0.0,
            "precision": 0.5,
            "recall": pytest.approx(2 / 3),
            "f1": pytest.approx(4 / 7),
        }
        assert multi_choice_score(["A"], ("A",))["exact"] == 1.0
        assert multi_choice_score([], [])["f1"] == 1.0

    def test_task_micro(self):
        out = multi_choice_scores([{"A", "B"}, {"C"}], [{"A"}, {"C", "D"}])
        # exact 0/2; tp = 1 + 1 = 2, chosen 3, correct 3
        assert out == {
            "instance_accuracy": 0.0,
            "precision": pytest.approx(2 / 3),
            "recall": pytest.approx(2 / 3),
            "f1": pytest.approx(2 / 3),
            "n": 2,
        }

    def test_string_rejected(self):
        with pytest.raises(TypeError, match="split the string"):
            multi_choice_score("BCD", ["B"])


class TestExtraction:
    def test_multiplicity_and_type(self):
        gold = [{"entity": "头痛", "type": "症状", "count": 2}, {"entity": "柴胡", "type": "药物"}]
        pred = [("症状", "头痛"), ("症状", " 头痛。"), ("症状", "头痛"), ("疾病", "柴胡")]
        out = extraction_prf(pred, gold)
        # matches: 头痛 x2 (third is surplus); 柴胡 has the wrong type
        assert (out["tp"], out["fp"], out["fn"]) == (2, 2, 1)
        assert out["precision"] == 0.5 and out["recall"] == pytest.approx(2 / 3)

    def test_normalisation(self):
        assert normalize_entity(" ＨＰ 阳性，") == "hp阳性"

    def test_no_prediction_is_full_miss(self):
        assert extraction_prf([], [("症状", "咳嗽")]) == {
            "precision": 0.0,
            "recall": 0.0,
            "f1": 0.0,
            "tp": 0,
            "fp": 0,
            "fn": 1,
        }
        assert extraction_prf([], [])["f1"] == 1.0

    def test_bad_count(self):
        with pytest.raises(ValueError):
            extraction_prf([], [{"entity": "a", "type": "t", "count": 0}])


class TestDose:
    def test_cosine_and_mae(self):
        gold = [{"herb": "柴胡", "dose_grams": 10}, {"herb": "白芍", "dose_grams": 15}]
        pred = {"柴胡": 12, "甘草": 6}
        out = dose_score(pred, gold)
        p, g = np.array([12, 0, 6]), np.array([10, 15, 0])
        assert out["cosine"] == pytest.approx(p @ g / np.linalg.norm(p) / np.linalg.norm(g))
        assert out["mae"] == 2.0 and out["shared"] == 1

    def test_no_shared(self):
        assert dose_score({}, {"柴胡": 10}) == {"cosine": 0.0, "mae": None, "shared": 0}

    def test_errors(self):
        with pytest.raises(ValueError, match="skip"):
            dose_score({"a": 1}, {})
        with pytest.raises(ValueError):
            dose_score({"a": -1}, {"a": 1})
        with pytest.raises(ValueError, match="twice"):
            dose_score([{"herb": "a", "dose_grams": 1}, {"herb": "a ", "dose_grams": 2}], {"a": 1})


class TestHardSubset:
    def test_seed_difficulty_values(self):
        # methodology example 2: mu=0.1, var=0.09 -> 0.945; mu=0 -> 1.0; mu=0.5, var=.25 -> 0.625
        ten = np.array([[1] + [0] * 9, [0] * 10, [1] * 5 + [0] * 5], dtype=float)
        assert composite_difficulty(ten) == pytest.approx([0.945, 1.0, 0.625])

    def test_population_variance_and_order(self):
        ids = ["easy", "all_fail", "split", "split2"]
        correctness = [[1, 1], [0, 0], [1, 0], [0, 1]]
        # D: easy 0, all_fail 1, split 0.5 + 0.5*0.25 = 0.625 (ties keep input order)
        assert hard_subset(ids, correctness, 3) == ["all_fail", "split", "split2"]
        assert hard_subset(ids, correctness, 10) == ["all_fail", "split", "split2", "easy"]
        assert hard_subset(ids, correctness, 2, lam=5.0) == ["split", "split2"]

    def test_missing_results_ignored(self):
        assert composite_difficulty([[1, np.nan, 0]]) == pytest.approx([0.625])
        with pytest.raises(ValueError, match="no observed"):
            composite_difficulty([[np.nan, np.nan]])

    def test_shape_errors(self):
        with pytest.raises(ValueError, match="rows"):
            hard_subset(["a"], [[1], [0]], 1)
        with pytest.raises(ValueError, match="2-D"):
            hard_subset(["a"], [1, 0], 1)
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            hard_subset(["a"], [[2]], 1)


def test_macro_mean():
    assert macro_mean([{"f1": 1.0}, {"f1": 0.5}], "f1") == 0.75
    with pytest.raises(ValueError):
        macro_mean([], "f1")


def test_hard_subset_ties_do_not_depend_on_model_order():
    # Same results in a different model order: float sums in row order would differ in the last bit.
    rows = [[1, 1, 1, 1, 1, 0], [1, 1, 0, 1, 1, 1]]
    assert composite_difficulty(rows)[0] == composite_difficulty(rows)[1]
    assert hard_subset(["first", "second"], rows, 1) == ["first"]
