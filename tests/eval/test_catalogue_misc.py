"""Catalogue items 7–19 and 25–28: worked and hand-computed edge cases."""

import math

import pytest

from eval import (
    calibration_error,
    elo_ratings,
    extract_json,
    fill_template,
    hit_rate,
    majority_vote,
    mean_pass_at_k,
    mean_reciprocal_rank,
    parse_tool_call,
    pick_option,
    recall_at_k,
    select_examples,
    slice_report,
    stratified_sample,
    truncate_conversation,
    validate_output,
    win_rates,
)


class TestRecallAtK:
    def test_distinct_and_k_beyond_length(self):
        assert recall_at_k(["a", "a", "b", "c"], ["a", "c", "c", "d"], 2) == pytest.approx(1 / 3)
        assert recall_at_k(["a", "c"], ["a", "c", "d"], 10) == pytest.approx(2 / 3)

    def test_empty_relevant(self):
        assert recall_at_k(["a"], [], 3) == 0.0

    def test_k_zero(self):
        assert recall_at_k(["a"], ["a"], 0) == 0.0

    def test_negative_k(self):
        with pytest.raises(ValueError):
            recall_at_k(["a"], ["a"], -1)


class TestHitRateAndMRR:
    queries = [
        {"retrieved": ["x", "a"], "relevant": ["a"]},
        {"retrieved": ["y", "z", "b"], "relevant": ["b"]},
        {"retrieved": [], "relevant": ["c"]},
    ]

    def test_hit_rate(self):
        assert hit_rate(self.queries, 2) == [pytest.approx(1 / 3), [1, 2]]

    def test_hit_rate_empty(self):
        assert hit_rate([], 5) == [0.0, []]

    def test_mrr(self):
        assert mean_reciprocal_rank(self.queries) == pytest.approx((1 / 2 + 1 / 3 + 0) / 3)
        assert mean_reciprocal_rank([]) == 0.0

    def test_missing_key(self):
        with pytest.raises(ValueError, match="relevant"):
            mean_reciprocal_rank([{"retrieved": []}])


class TestPassAtK:
    def test_formula(self):
        # n=5, c=2, k=2: 1 - C(3,2)/C(5,2) = 1 - 3/10
        assert mean_pass_at_k([[5, 2]], 2) == pytest.approx(0.7)

    def test_skip_small_n_and_mean(self):
        assert mean_pass_at_k([[1, 1], [4, 0], [4, 4]], 2) == pytest.approx(0.5)

    def test_all_skipped(self):
        assert mean_pass_at_k([[1, 1]], 2) == 0.0
        assert mean_pass_at_k([], 1) == 0.0

    def test_comb_zero_when_m_less_than_k(self):
        # n-c = 1 < k = 2: C(1,2) = 0 -> pass@2 = 1
        assert mean_pass_at_k([[3, 2]], 2) == 1.0

    def test_bad_counts(self):
        with pytest.raises(ValueError, match="exceeds"):
            mean_pass_at_k([[2, 3]], 1)
        with pytest.raises(TypeError):
            mean_pass_at_k([[2.5, 1]], 1)


class TestMajorityVote:
    def test_normalised_counts(self):
        assert majority_vote([" B", "a", "b ", "A", "b"]) == "b"

    def test_tie_earliest_first_occurrence(self):
        assert majority_vote(["x", "Y", "y", "X"]) == "x"

    def test_empty_ignored(self):
        assert majority_vote(["  ", "", "c"]) == "c"
        assert majority_vote(["  "]) is None
        assert majority_vote([]) is None


class TestPickOption:
    def test_mean_not_sum(self):
        options = [{"label": "A", "logprobs": [-1.0, -1.0, -1.0]}, {"label": "B", "logprobs": [-1.5]}]
        assert pick_option(options) == "A"

    def test_skip_empty_and_ties(self):
        options = [
            {"label": "A", "logprobs": []},
            {"label": "B", "logprobs": [-2.0]},
            {"label": "C", "logprobs": [-1.0, -3.0]},
        ]
        assert pick_option(options) == "B"

    def test_all_skipped(self):
        assert pick_option([{"label": "A", "logprobs": []}]) is None
        assert pick_option([]) is None

    def test_negative_infinity_allowed(self):
        assert pick_option([{"label": "A", "logprobs": [-math.inf]}, {"label": "B", "logprobs": [-50.0]}]) == "B"


class TestCalibrationError:
    def test_bins(self):
        # 2 bins: [0.2 (wrong), 0.4 (right)] -> bin0 acc 0.5 conf 0.3; [0.9 right, 1.0 right] -> bin1 acc 1 conf 0.95
        value = calibration_error([0.2, 0.4, 0.9, 1.0], [False, 1, True, 1], 2)
        assert value == pytest.approx(0.5 * 0.2 + 0.5 * 0.05)

    def test_confidence_one_in_last_bin(self):
        assert calibration_error([1.0], [True], 4) == 0.0

    def test_empty(self):
        assert calibration_error([], [], 10) == 0.0

    def test_out_of_range(self):
        with pytest.raises(ValueError):
            calibration_error([1.2], [True], 2)
        with pytest.raises(ValueError):
            calibration_error([0.5], ["yes"], 2)


class TestWinRates:
    def test_points_over_games(self):
        verdicts = [["m1", "m2", "a"], ["m2", "m3", "tie"], ["m1", "m3", "b"]]
        assert win_rates(verdicts) == {"m1": 0.5, "m2": 0.25, "m3": 0.75}

    def test_bad_result(self):
        with pytest.raises(ValueError, match="'a', 'b' or 'tie'"):
            win_rates([["x", "y", "A"]])

    def test_empty(self):
        assert win_rates([]) == {}


class TestElo:
    def test_first_match(self):
        ratings = elo_ratings([["a", "b", 1]], 32)
        assert ratings == {"a": 1016.0, "b": 984.0}

    def test_uses_ratings_before_match(self):
        ratings = elo_ratings([["a", "b", 1], ["b", "a", 0.5]], 32)
        expected_b = 1 / (1 + 10 ** ((1016 - 984) / 400))
        assert ratings["b"] == pytest.approx(984 + 32 * (0.5 - expected_b))
        assert ratings["a"] == pytest.approx(1016 + 32 * (0.5 - (1 - expected_b)))

    def test_bad_score(self):
        with pytest.raises(ValueError):
            elo_ratings([["a", "b", 2]], 32)


class TestFillTemplate:
    def test_slots(self):
        out = fill_template("Hi {name}, {x1} {missing} {2bad} {a-b} {} {{name}} {missing}", {"name": "Ann", "x1": 3})
        assert out == {"text": "Hi Ann, 3 {missing} {2bad} {a-b} {} {Ann} {missing}", "missing": ["missing"]}

    def test_values_not_reexpanded(self):
        assert fill_template("{a}{b}", {"a": "{b}", "b": "x"})["text"] == "{b}x"

    def test_missing_order(self):
        assert fill_template("{z} {y} {z}", {})["missing"] == ["z", "y"]


class TestSelectExamples:
    def test_overlap_order_and_ties(self):
        pool = ["fever cough", "cough", "headache", "Fever Cough rash", "cough fever"]
        assert select_examples("fever cough today", pool, 3) == [0, 3, 4]

    def test_zero_overlap_excluded(self):
        assert select_examples("x", ["a", "b"], 5) == []

    def test_distinct_words(self):
        assert select_examples("a a b", ["a a a", "a b"], 2) == [1, 0]


class TestExtractJson:
    def test_braces_inside_strings(self):
        assert extract_json('noise {"a": "} {", "b": {"c": 1}} tail') == {"a": "} {", "b": {"c": 1}}

    def test_escaped_quote(self):
        assert extract_json(r'{"a": "x\"}"}') == {"a": 'x"}'}

    def test_skips_invalid_then_inner(self):
        assert extract_json('{bad {"ok": true}') == {"ok": True}

    def test_none(self):
        assert extract_json("no json") is None
        assert extract_json("[1, 2]") is None


class TestParseToolCall:
    @pytest.mark.parametrize(
        "text, expected",
        [
            ('f(q="x", k=3)', {"name": "f", "args": {"q": "x", "k": 3}}),
            ("  get_time()  ", {"name": "get_time", "args": {}}),
            (
                "f( a = -2 , b=0.5, c=True, d=None, e=False )",
                {"name": "f", "args": {"a": -2, "b": 0.5, "c": True, "d": None, "e": False}},
            ),
            (r'f(s="a\"b\\c\n")', {"name": "f", "args": {"s": 'a"b\\cn'}}),
            ('_f2(x="(,)")', {"name": "_f2", "args": {"x": "(,)"}}),
        ],
    )
    def test_valid(self, text, expected):
        assert parse_tool_call(text) == expected

    @pytest.mark.parametrize(
        "text",
        [
            "f (x=1)",
            "2f()",
            "f(x=1,)",
            "f(x=1 y=2)",
            "f(x=abc)",
            "f(x='a')",
            "f(1x=1)",
            "f(x=1",
            "f(x=1)y",
            "f(x=1, x=2)",
            'f(x="unterminated)',
            "f(x=1.)",
            "f(x=true)",
            "",
        ],
    )
    def test_malformed(self, text):
        assert parse_tool_call(text) is None


class TestValidateOutput:
    def test_order_of_problems(self):
        schema = {"a": "int", "b": "float", "c": "str", "d": "bool", "e": "list"}
        text = '{"z": 1, "a": true, "b": 3, "d": 1, "e": [], "y": null}'
        assert validate_output(text, schema) == ["wrong type: a", "missing: c", "wrong type: d", "extra: z", "extra: y"]

    def test_float_rejects_bool(self):
        assert validate_output('{"b": false}', {"b": "float"}) == ["wrong type: b"]

    def test_invalid_and_not_object(self):
        assert validate_output("{", {}) == ["invalid json"]
        assert validate_output("[1]", {}) == ["not an object"]

    def test_valid(self):
        assert validate_output('{"a": 1.5}', {"a": "float"}) == []

    def test_unknown_schema_type(self):
        with pytest.raises(ValueError, match="schema"):
            validate_output("{}", {"a": "dict"})


class TestTruncateConversation:
    def test_keeps_system_and_newest_tail(self):
        messages = [
            {"role": "system", "content": "be brief"},  # 2
            {"role": "user", "content": "one two three"},  # 3
            {"role": "assistant", "content": "four"},  # 1
            {"role": "user", "content": "five six"},  # 2
        ]
        assert truncate_conversation(messages, 5) == [messages[0], messages[2], messages[3]]

    def test_stops_at_first_that_does_not_fit(self):
        messages = [
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b c d"},
            {"role": "user", "content": "e"},
        ]
        assert truncate_conversation(messages, 3) == [messages[2]]

    def test_system_over_budget_still_kept(self):
        messages = [{"role": "system", "content": "a b c"}, {"role": "user", "content": "d"}]
        assert truncate_conversation(messages, 1) == [messages[0]]


class TestStratifiedSample:
    def test_first_k_per_label(self):
        examples = [{"label": "x", "i": 0}, {"label": "y", "i": 1}, {"label": "x", "i": 2}, {"label": "x", "i": 3}]
        assert stratified_sample(examples, 2) == examples[:3]
        assert stratified_sample(examples, 0) == []


class TestSliceReport:
    def test_micro_macro_worst(self):
        records = [
            {"slice": "b", "correct": True},
            {"slice": "b", "correct": False},
            {"slice": "a", "correct": False},
            {"slice": "a", "correct": True},
            {"slice": "c", "correct": True},
        ]
        assert slice_report(records) == {"micro": 0.6, "macro": pytest.approx(2 / 3), "worst": "a"}

    def test_empty(self):
        assert slice_report([]) == {"micro": 0.0, "macro": 0.0, "worst": None}
