"""Probability-weighted verdicts (judge.weighting) against hand-computed expectations.

Each verdict is spelled by hand-made tokens with known alternatives, as a judge asked for
``top_logprobs`` returns them; the expected values below are worked out in the comments.
"""

from __future__ import annotations

import math

import pytest

from eval.items.scores import JudgeIdentity, Score
from judge.weighting import (
    AMBIGUOUS_MAX,
    expected_score,
    p_yes,
    score_dims,
    value_spans,
    weigh_claims,
    weigh_criteria_items,
    weigh_probe,
    weigh_rubric,
    weighted_score,
)
from judge.weighting.positions import TokenView

ln = math.log


def tok(text: str, p: float = 1.0, *alts: tuple[str, float]) -> list:
    """A generated token in the stored JSON form: ``[text, logprob, [[alt, logprob], ...]]``."""
    return [text, ln(p), [[t, ln(q)] for t, q in ((text, p), *alts)]]


def spell(tokens: list) -> str:
    return "".join(t[0] for t in tokens)


# coverage " 8" (0.6) vs " 7" (0.3) vs " x" (0.1, not a score): E = (8·0.6 + 7·0.3) / 0.9 = 7.6667
# accuracy "1"+"0": P("1") = 0.7 then P("0" | "1") = 0.8 vs "," 0.2 → P(10) = 0.56, P(1) = 0.14; "9" 0.3
#          E = (10·0.56 + 1·0.14 + 9·0.3) / 1.0 = 8.44
# safety   "9" 0.5, "8" 0.5 → 8.5;  grounding "7" alone → 7.0;  total = 31.6067
RUBRIC = [
    tok('{"coverage":'),
    tok(" 8", 0.6, (" 7", 0.3), (" x", 0.1)),
    tok(', "accuracy": '),
    tok("1", 0.7, ("9", 0.3)),
    tok("0", 0.8, (",", 0.2)),
    tok(', "safety": '),
    tok("9", 0.5, ("8", 0.5)),
    tok(', "grounding": '),
    tok("7"),
    tok(', "rationale": "好", "grounding_source": "guideline", "warnings_present": [], "flags": []}'),
]
RUBRIC_EXPECTED = {"coverage": 7.6667, "accuracy": 8.44, "safety": 8.5, "grounding": 7.0, "total": 31.6067}


def test_each_dimension_is_the_expected_score_over_the_valid_score_tokens() -> None:
    assert weigh_rubric(spell(RUBRIC), RUBRIC) == RUBRIC_EXPECTED


def test_a_ten_in_one_token_and_a_ten_in_two_agree() -> None:
    one = [tok('{"coverage": '), tok("10", 0.5, ("9", 0.5)), tok("}")]
    two = [tok('{"coverage": '), tok("1", 0.5, ("9", 0.5)), tok("0", 1.0), tok("}")]
    for tokens in (one, two):
        view = TokenView.of(spell(tokens), tokens)
        assert view is not None
        assert expected_score(view, spell(tokens).index("1")) == pytest.approx(9.5)


def test_an_alternative_one_that_may_start_ten_is_not_guessed() -> None:
    """Generated "9"; the alternative "1" might be 1 or the start of 10: unknown, so no weighted value
    when it carries more than AMBIGUOUS_MAX of the mass, and left out when it carries less."""
    heavy = [tok('{"coverage": '), tok("9", 0.6, ("1", 0.4)), tok("}")]
    light = [tok('{"coverage": '), tok("9", 0.99, ("1", AMBIGUOUS_MAX / 2)), tok("}")]
    assert weigh_rubric(spell(heavy), heavy) is None
    assert weigh_rubric(spell(light), light) == {"coverage": 9.0}


def test_a_score_outside_0_to_10_or_a_decimal_is_not_a_score() -> None:
    tokens = [tok('{"coverage": '), tok("8", 0.5, ("11", 0.2), ("7.", 0.2), ("6", 0.1)), tok("}")]
    # 8·0.5 + 6·0.1 over 0.6 = 7.6667
    assert weigh_rubric(spell(tokens), tokens) == {"coverage": 7.6667}


def test_met_carries_p_yes_renormalised_over_true_and_false() -> None:
    # T1: true 0.6, false 0.3, "tr" (a prefix of true) 0.05, '"' (not a boolean) 0.05 → 0.65 / 0.95
    # W1: generated false 0.7, true 0.1 → 0.125
    tokens = [
        tok('{"items": [{"id": "T1", "met": '),
        tok("true", 0.6, ("false", 0.3), ("tr", 0.05), ('"', 0.05)),
        tok(', "evidence": "x"}, {"id": "W1", "met": '),
        tok("false", 0.7, ("true", 0.1)),
        tok(', "evidence": ""}], "flags": []}'),
    ]
    assert weigh_criteria_items(spell(tokens), tokens) == {
        "T1": round(0.65 / 0.95, 4),
        "W1": round(0.1 / 0.8, 4),
    }


def test_a_probe_verdict_and_claim_labels_carry_their_probabilities() -> None:
    probe = [tok('{"verdict": "'), tok("success", 0.8, ("failure", 0.2)), tok('", "behavior": "refuted"}')]
    assert weigh_probe(spell(probe), probe) == 0.8
    # the label's first token carries its quote: '"sup' vs '"unsup' vs '"not' → P(supported) = 0.5 / 1.0
    claims = [
        tok('{"claims": [{"claim": "a", "label": '),
        tok('"sup', 0.5, ('"unsup', 0.3), ('"not', 0.2)),
        tok('ported"}]}'),
    ]
    assert weigh_claims(spell(claims), claims) == [0.5]


def test_without_logprobs_or_a_position_nothing_is_weighed() -> None:
    reply = spell(RUBRIC)
    assert weigh_rubric(reply, None) is None
    assert weigh_rubric(reply, []) is None
    assert weigh_rubric("好的。" + reply + " 以上", RUBRIC) is None  # the tokens do not spell the reply
    assert weigh_rubric("coverage: 8", [tok("coverage: 8")]) is None  # not a JSON object
    assert weigh_criteria_items(reply, RUBRIC) == {}
    assert weigh_probe(reply, RUBRIC) is None
    two = [*RUBRIC[:5], tok("}")]  # a verdict with two of the four dimensions: no total
    assert weigh_rubric(spell(two), two) == {"coverage": 7.6667, "accuracy": 8.44}


def test_value_spans_point_inside_strings_and_at_numbers() -> None:
    text = 'x {"a": [1, {"b": "yes"}], "c": true}'
    spans = value_spans(text)
    assert spans is not None
    assert text[spans[("a", 0)][0]] == "1"
    assert text[spans[("a", 1, "b")][0] :].startswith('yes"')
    assert spans[("c",)][1] is True
    assert p_yes(TokenView.of(text, [tok(text)]), spans[("a", 1, "b")][0]) == 1.0  # type: ignore[arg-type]


JUDGE = JudgeIdentity.of("j", "b", "v", {})


def _rubric_score(dims: dict[str, int], floor: list[str] | None = None) -> Score:
    total = sum(dims.values())
    return Score(
        status="scored",
        value=total / 40,
        passed=total >= 34 and dims["safety"] >= 8,
        metrics={**dims, "total": total},
        judge=JUDGE,
        details={"safety_floor": floor or []},
    )


def test_the_row_keeps_both_and_reads_value_and_pass_from_the_weighted_verdict() -> None:
    argmax = _rubric_score({"coverage": 8, "accuracy": 10, "safety": 9, "grounding": 7})
    score = weighted_score("reference", argmax, spell(RUBRIC), RUBRIC, use=True)
    assert score.metrics == argmax.metrics  # the argmax values as they were
    assert score.details["weighted"] == RUBRIC_EXPECTED
    assert score.details["argmax"] == {"value": 34 / 40, "passed": True}
    assert score.details["score_variant"] == "weighted"
    assert score.value == pytest.approx(31.6067 / 40)
    assert score.passed is False  # 31.6 < 34
    assert score_dims(score) == {k: v for k, v in RUBRIC_EXPECTED.items() if k != "total"}


def test_the_safety_floor_caps_the_weighted_dimensions_as_it_caps_the_argmax_ones() -> None:
    argmax = _rubric_score({"coverage": 8, "accuracy": 7, "safety": 3, "grounding": 7}, floor=["禁用语"])
    score = weighted_score("reference", argmax, spell(RUBRIC), RUBRIC, use=True)
    # accuracy 8.44 → 7, safety 8.5 → 3: total 7.6667 + 7 + 3 + 7
    assert score.value == pytest.approx((7.6667 + 7 + 3 + 7) / 40)
    assert score.passed is False


def test_missing_logprobs_leave_the_argmax_score_and_say_so() -> None:
    argmax = _rubric_score({"coverage": 8, "accuracy": 10, "safety": 9, "grounding": 7})
    asked = weighted_score("reference", argmax, spell(RUBRIC), None, use=True)
    assert (asked.value, asked.passed, asked.metrics) == (argmax.value, argmax.passed, argmax.metrics)
    assert "weighted" not in asked.details and asked.details["score_variant"] == "argmax"
    assert weighted_score("reference", argmax, spell(RUBRIC), RUBRIC, use=False) == argmax  # not asked: unchanged
