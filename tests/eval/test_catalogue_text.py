"""Catalogue items 1–6 and 20–24: hand-computed cases for every edge rule in the spec."""

import pytest

from eval import (
    best_f1,
    contaminated_items,
    dedupe_prompts,
    detect_refusals,
    exact_match,
    final_answer,
    near_duplicates,
    ngram_precision,
    normalize_answer,
    rouge_l,
    token_f1,
)


class TestNormalizeAnswer:
    def test_order_lowercase_punctuation_articles_spaces(self):
        assert normalize_answer("  The  Cat's, a HAT!  ") == "cats hat"

    def test_punctuation_deleted_not_spaced(self):
        # deletion joins the pieces: "e.g." -> "eg", "well-known" -> "wellknown"
        assert normalize_answer("e.g. well-known") == "eg wellknown"

    def test_articles_only_inside_words_kept(self):
        assert normalize_answer("Theory of an anthem") == "theory of anthem"

    def test_nothing_left(self):
        assert normalize_answer("The, a. AN!") == ""
        assert normalize_answer("") == ""

    def test_non_ascii_punctuation_is_kept(self):
        assert normalize_answer("肺炎。") == "肺炎。"

    def test_rejects_non_string(self):
        with pytest.raises(TypeError, match="text must be a str"):
            normalize_answer(None)


class TestExactMatch:
    def test_aliases(self):
        assert exact_match(["The Eiffel Tower", "paris"], [["eiffel tower"], ["London", "Rome"]]) == 0.5

    def test_empty(self):
        assert exact_match([], []) == 0.0

    def test_empty_normalised_strings_match(self):
        assert exact_match(["the"], [["a!"]]) == 1.0

    def test_no_aliases_scores_zero(self):
        assert exact_match(["x"], [[]]) == 0.0

    def test_length_mismatch(self):
        with pytest.raises(ValueError, match="same length"):
            exact_match(["a"], [])

    def test_answers_must_be_lists(self):
        with pytest.raises(TypeError, match=r"answers\[0\] must be a list"):
            exact_match(["a"], ["a"])


class TestTokenF1:
    def test_partial_overlap(self):
        # pred {cat, sat, mat}, ref {cat, sat, on, mat, quietly}: common 3, P=1, R=3/5
        assert token_f1("The cat sat, mat", "a cat sat on the mat quietly") == pytest.approx(2 * 1 * 0.6 / 1.6)

    def test_multiset_counts(self):
        # common = min(3,1) = 1 -> P=1/3, R=1
        assert token_f1("yes yes yes", "yes") == pytest.approx(0.5)

    def test_both_empty_after_cleanup(self):
        assert token_f1("the", "A.") == 1.0

    def test_one_empty(self):
        assert token_f1("", "cat") == 0.0
        assert token_f1("cat", "an") == 0.0

    def test_no_common(self):
        assert token_f1("dog", "cat") == 0.0


class TestBestF1:
    def test_best_and_index(self):
        assert best_f1("a b", ["c", "a b c", "a b"]) == [1.0, 2]

    def test_ties_go_to_earliest(self):
        assert best_f1("a b", ["a x", "b y"]) == [0.5, 0]

    def test_all_zero_is_index_zero(self):
        assert best_f1("a", ["b", "c"]) == [0.0, 0]

    def test_no_references(self):
        assert best_f1("a", []) == [0.0, -1]

    def test_no_cleanup_beyond_lowercase(self):
        # punctuation and articles are kept: "cat." != "cat", "the" counts
        assert best_f1("The cat.", ["the cat"]) == [0.5, 0]

    def test_both_empty(self):
        assert best_f1("", ["  "]) == [1.0, 0]


class TestRougeL:
    def test_lcs_with_gaps(self):
        # LCS(a b c d e, a c e f) = 3 -> P=3/5, R=3/4
        assert rouge_l("a b c d e", "A C E F") == pytest.approx(2 * 0.6 * 0.75 / 1.35)

    def test_zero_and_empty(self):
        assert rouge_l("", "a") == 0.0
        assert rouge_l("x", "y") == 0.0
        assert rouge_l("", "") == 0.0

    def test_identical(self):
        assert rouge_l("same words here", "same words here") == 1.0


class TestNgramPrecision:
    def test_clip_to_max_single_reference(self):
        # candidate unigrams: the x4; ref1 has 2, ref2 has 1 -> clipped 2 of 4
        assert ngram_precision("the the the the", ["the cat the", "the"], 1) == 0.5

    def test_bigrams(self):
        assert ngram_precision("a b c", ["a b", "b c"], 2) == 1.0
        assert ngram_precision("a b c", ["a b"], 2) == 0.5

    def test_too_short(self):
        assert ngram_precision("a", ["a"], 2) == 0.0

    def test_no_references(self):
        assert ngram_precision("a b", [], 1) == 0.0

    def test_n_must_be_positive(self):
        with pytest.raises(ValueError):
            ngram_precision("a", ["a"], 0)


class TestFinalAnswer:
    def test_last_answer_marker(self):
        text = "Answer: wrong\nthinking...\nAnswer:  B  \nextra"
        assert final_answer(text) == "B"

    def test_answer_at_end_without_newline(self):
        assert final_answer("so Answer: 42") == "42"

    def test_case_sensitive_marker(self):
        assert final_answer("answer: 1\nlast line ") == "last line"

    def test_last_non_blank_line(self):
        assert final_answer("one\n two \n   \n\n") == "two"

    def test_nothing(self):
        assert final_answer("") == ""
        assert final_answer(" \n\t\n") == ""

    def test_empty_after_marker(self):
        assert final_answer("x\nAnswer:\ny") == ""


class TestDetectRefusals:
    def test_whitespace_collapsed_and_lowercased(self):
        responses = ["I   CANNOT\nhelp with that", "Sure, here it is", "i cannot help"]
        assert detect_refusals(responses, ["I cannot help"]) == [pytest.approx(2 / 3), [0, 2]]

    def test_no_responses(self):
        assert detect_refusals([], ["x"]) == [0.0, []]

    def test_no_phrases(self):
        assert detect_refusals(["a"], []) == [0.0, []]

    def test_chinese_phrase(self):
        assert detect_refusals(["抱歉，我无法回答"], ["无法回答"]) == [1.0, [0]]


class TestNearDuplicates:
    def test_shingles_and_threshold(self):
        docs = ["a b c d", "a b c e", "x y", "X Y", ""]
        # doc0 {abc, bcd}, doc1 {abc, bce}: J = 1/3; doc2 == doc3 (one short shingle)
        assert near_duplicates(docs, 3, 0.3) == [[0, 1], [2, 3]]
        assert near_duplicates(docs, 3, 0.5) == [[2, 3]]

    def test_two_empty_docs_have_jaccard_zero(self):
        assert near_duplicates(["", ""], 2, 0.1) == []
        assert near_duplicates(["", ""], 2, 0.0) == [[0, 1]]

    def test_short_doc_single_shingle(self):
        assert near_duplicates(["a b", "a b c"], 3, 0.01) == []


class TestDedupePrompts:
    def test_keys_and_empty(self):
        prompts = ["Hello, World!", "hello world", "  ", "!!!", "Hello   world.", "Other"]
        assert dedupe_prompts(prompts) == {"kept": ["Hello, World!", "Other"], "removed": [1, 2, 3, 4]}

    def test_articles_are_not_dropped(self):
        assert dedupe_prompts(["the cat", "cat"])["removed"] == []


class TestContamination:
    def test_flagged(self):
        train = ["The patient had a fever of 39 degrees"]
        items = ["a fever of 39 today", "no overlap here at all", "fever"]
        assert contaminated_items(train, items, 3) == [[0], pytest.approx(1 / 3)]

    def test_no_items(self):
        assert contaminated_items(["a b"], [], 1) == [[], 0.0]

    def test_short_items_never_flagged(self):
        assert contaminated_items(["a b"], ["a b"], 3) == [[], 0.0]
