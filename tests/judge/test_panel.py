"""Judge panels: the aggregation rules on hand-made verdicts, and simulations against a known truth
with oracle judges (``tests.fakes.oracle_judges``). Every simulation is seeded; nothing is timed."""

from __future__ import annotations

import numpy as np
import pytest

from judge.panel import (
    PANEL_RULES,
    MemberVerdict,
    Reliability,
    aggregate,
    estimate_reliability,
    member_agreement,
    posterior_pass,
    vote_matrix,
)
from judge.rubric import DIMENSIONS, TOTAL_MAX
from tests.fakes.oracle_judges import (
    drop_votes,
    member_verdicts,
    oracle_dims,
    oracle_votes,
    true_labels,
)

P, F, X = MemberVerdict(True), MemberVerdict(False), MemberVerdict(None)
N = np.nan


def rubric(
    coverage: float, accuracy: float, safety: float, grounding: float, passed: bool | None = None
) -> MemberVerdict:
    total = coverage + accuracy + safety + grounding
    vote = (total >= 34 and safety >= 8) if passed is None else passed
    return MemberVerdict(vote, dict(zip(DIMENSIONS, (coverage, accuracy, safety, grounding), strict=True)))


def reliability(sens: list[float], spec: list[float], prevalence: float = 0.5) -> Reliability:
    acc = tuple(prevalence * se + (1 - prevalence) * sp for se, sp in zip(sens, spec, strict=True))
    return Reliability(tuple(sens), tuple(spec), prevalence, acc, items=100, iterations=1, converged=True)


# --- the rules on hand-made verdicts -------------------------------------------------------------


def test_majority_binary_votes() -> None:
    assert PANEL_RULES == ("majority", "mean", "reliability")
    v = aggregate([P, P, F])
    assert (v.passed, v.value, v.dims, v.votes, v.missing, v.tie) == (True, 1.0, None, 3, 0, False)
    v = aggregate([P, F, F])
    assert (v.passed, v.value, v.tie) == (False, 0.0, False)


def test_a_tied_vote_fails() -> None:
    for rule in ("majority", "mean"):
        v = aggregate([P, F], rule)
        assert (v.passed, v.value, v.tie, v.votes) == (False, 0.0, True, 2)
    v = aggregate([P, P, F, F])
    assert v.passed is False and v.tie


def test_missing_verdicts_are_left_out() -> None:
    v = aggregate([P, X, X])
    assert (v.passed, v.votes, v.missing, v.tie) == (True, 1, 2, False)
    v = aggregate([P, F, X])  # the one dead member turns a 3-panel into a tied 2-panel
    assert (v.passed, v.votes, v.missing, v.tie) == (False, 2, 1, True)
    for rule in PANEL_RULES:
        none = aggregate([X, X, X], rule, reliability([0.9] * 3, [0.9] * 3))
        assert (none.passed, none.value, none.dims, none.votes, none.missing, none.tie) == (
            None,
            None,
            None,
            0,
            3,
            False,
        )


def test_majority_rubric_takes_median_dimensions() -> None:
    v = aggregate([rubric(10, 9, 9, 8), rubric(9, 9, 8, 9), rubric(3, 4, 2, 5)])
    assert v.passed is True
    assert v.dims == {"coverage": 9.0, "accuracy": 9.0, "safety": 8.0, "grounding": 8.0}
    assert v.value == pytest.approx(34 / TOTAL_MAX)
    two = aggregate([rubric(10, 9, 9, 8), rubric(5, 6, 4, 7)])  # tied: fails, median of two is their mean
    assert (two.passed, two.tie) == (False, True)
    assert two.dims == {"coverage": 7.5, "accuracy": 7.5, "safety": 6.5, "grounding": 7.5}


def test_mean_rubric_applies_the_pass_rule_to_the_means() -> None:
    outvoted = [rubric(10, 10, 10, 10), rubric(9, 9, 8, 9), rubric(2, 2, 2, 2)]
    assert aggregate(outvoted, "majority").passed is True
    mean = aggregate(outvoted, "mean")  # mean total 27.7 < 34
    assert mean.passed is False and mean.value == pytest.approx((40 + 35 + 8) / 3 / TOTAL_MAX)
    unsafe = aggregate([rubric(10, 10, 7, 10), rubric(10, 10, 8, 10)], "mean")  # total 37.5, safety 7.5 < 8
    assert unsafe.passed is False and unsafe.dims is not None and unsafe.dims["safety"] == 7.5
    at_the_bar = aggregate([rubric(9, 9, 8, 8), rubric(10, 8, 8, 8)], "mean")  # total exactly 34.0, safety 8.0
    assert at_the_bar.passed is True


def test_mean_binary_needs_more_than_half() -> None:
    assert aggregate([P, P, F], "mean").passed is True
    assert aggregate([P, F, F, X], "mean").passed is False


def test_reliability_rule_weighs_members_by_their_estimated_quality() -> None:
    rel = reliability([0.97, 0.6, 0.6], [0.97, 0.6, 0.6])
    assert aggregate([P, F, F], "majority").passed is False
    v = aggregate([P, F, F], "reliability", rel)  # one near-perfect judge outweighs two near-coins
    assert v.passed is True and not v.tie
    dims = [rubric(10, 10, 9, 10), rubric(4, 4, 4, 4), rubric(6, 6, 6, 6)]
    w = np.log(np.array([0.97, 0.6, 0.6]) / np.array([0.03, 0.4, 0.4]))
    expected = np.average([[10, 10, 9, 10], [4, 4, 4, 4], [6, 6, 6, 6]], axis=0, weights=w)
    got = aggregate(dims, "reliability", rel)
    assert got.dims is not None and list(got.dims.values()) == pytest.approx(list(expected))
    assert got.value == pytest.approx(expected.sum() / TOTAL_MAX)
    # members no better than a coin weigh nothing; if none is better, all weigh the same
    coins = aggregate(dims, "reliability", reliability([0.5, 0.4, 0.3], [0.5, 0.4, 0.3]))
    assert coins.dims is not None and list(coins.dims.values()) == pytest.approx([20 / 3, 20 / 3, 19 / 3, 20 / 3])


def test_reliability_rule_uses_only_present_votes() -> None:
    rel = reliability([0.97, 0.6, 0.8], [0.97, 0.6, 0.8])
    assert aggregate([X, F, P], "reliability", rel).passed is True  # the stronger of the two present wins
    assert aggregate([X, P, F], "reliability", rel).passed is False
    even = aggregate([X, F, P], "reliability", reliability([0.97, 0.6, 0.6], [0.97, 0.6, 0.6]))
    assert (even.passed, even.tie) == (True, True)  # P(pass) = 0.5 exactly: the rule is ≥ 0.5


def test_posterior_pass_is_bayes_rule() -> None:
    rel = reliability([0.9, 0.7], [0.8, 0.6], prevalence=0.6)
    assert posterior_pass([1.0, np.nan], rel) == pytest.approx(0.6 * 0.9 / (0.6 * 0.9 + 0.4 * 0.2))
    both = 0.6 * 0.9 * 0.3 / (0.6 * 0.9 * 0.3 + 0.4 * 0.2 * 0.6)
    assert posterior_pass([1.0, 0.0], rel) == pytest.approx(both)
    assert posterior_pass([np.nan, np.nan], rel) == pytest.approx(0.6)


def test_refusals_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="needs a Reliability"):
        aggregate([P, F, P], "reliability")
    with pytest.raises(ValueError, match="did you mean 'majority'"):
        aggregate([P, F, P], "majorty")
    with pytest.raises(ValueError, match="describes 2 members, the panel gave 3"):
        aggregate([P, F, P], "reliability", reliability([0.9, 0.9], [0.9, 0.9]))
    with pytest.raises(ValueError, match="mixes rubric verdicts"):
        aggregate([P, rubric(9, 9, 9, 9)])
    with pytest.raises(ValueError, match="exactly the keys"):
        MemberVerdict(True, {"coverage": 9})
    with pytest.raises(ValueError, match=r"dims\['safety'\] must be in 0..10"):
        rubric(9, 9, 11, 9, passed=True)
    with pytest.raises(ValueError, match="cannot carry dimension scores"):
        MemberVerdict(None, dict.fromkeys(DIMENSIONS, 5.0))
    with pytest.raises(ValueError, match=r"votes\[0, 1\] = 2.0"):
        estimate_reliability(np.array([[1.0, 2.0]]))
    with pytest.raises(ValueError, match="no item has a vote"):
        estimate_reliability(np.full((3, 2), np.nan))


def test_vote_matrix_and_member_agreement() -> None:
    votes = vote_matrix([[P, F, X], [P, P, P], [F, X, F], [X, P, F]])
    assert np.array_equal(votes, np.array([[1, 0, N], [1, 1, 1], [0, N, 0], [N, 1, 0]]), equal_nan=True)
    panel = [True, True, None, False]
    assert member_agreement(votes, panel) == [1.0, 1 / 3, 1.0]
    assert member_agreement(votes, [None] * 4) == [None, None, None]


# --- simulations against a known truth ----------------------------------------------------------


def _agreement(votes: np.ndarray, truth: np.ndarray, rule: str, rel: Reliability | None = None) -> float:
    """Share of items on which the panel's verdict is the truth; each distinct vote pattern is aggregated once."""
    patterns, which = np.unique(np.nan_to_num(votes, nan=-1.0), axis=0, return_inverse=True)
    decided = np.array([aggregate(member_verdicts(np.where(p < 0, np.nan, p)), rule, rel).passed for p in patterns])
    return float(np.mean(decided[which.ravel()] == truth))


def _realised_accuracy(votes: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Each oracle judge's accuracy on these very items (over the votes it gave)."""
    return np.nanmean(np.where(np.isnan(votes), np.nan, votes == truth[:, None]), axis=0)


def _equal_judges(seed: int) -> tuple[float, float]:
    """(majority's agreement with the truth, the best single judge's) for three 75% judges."""
    rng = np.random.default_rng(seed)
    truth = true_labels(2000, 0.6, rng)
    votes = oracle_votes(truth, [0.75, 0.75, 0.75], rng)
    return _agreement(votes, truth, "majority"), float(_realised_accuracy(votes, truth).max())


def _one_strong_judge(seed: int) -> tuple[float, float]:
    """(majority's, the reliability rule's agreement with the truth) for judges of 0.90, 0.65, 0.60."""
    rng = np.random.default_rng(seed)
    truth = true_labels(5000, 0.6, rng)
    votes = oracle_votes(truth, [0.90, 0.65, 0.60], rng)
    return _agreement(votes, truth, "majority"), _agreement(votes, truth, "reliability", estimate_reliability(votes))


def test_three_equal_judges_beat_one() -> None:
    majority, single = _equal_judges(11)
    assert majority >= 0.81  # theory: 0.75³ + 3·0.75²·0.25 = 0.844
    assert majority >= single + 0.05
    assert sum(m >= 0.81 and m >= s + 0.05 for m, s in map(_equal_judges, range(20))) >= 18


def test_reliability_rule_follows_the_strong_judge() -> None:
    majority, by_reliability = _one_strong_judge(12)
    assert 0.77 <= majority <= 0.85  # theory: 0.813
    assert by_reliability >= 0.88  # theory (the strong judge alone): 0.90
    # the estimate comes from the same unlabelled votes; with two weak members it needs thousands of
    # items before their combined weight reliably stays below the strong judge's
    assert sum(0.77 <= m <= 0.85 and r >= 0.88 for m, r in map(_one_strong_judge, range(20))) >= 18


def test_reliability_rule_with_dead_members() -> None:
    rng = np.random.default_rng(13)
    truth = true_labels(3000, 0.6, rng)
    votes = drop_votes(oracle_votes(truth, [0.90, 0.65, 0.60], rng), 0.15, rng)
    answered = ~np.isnan(votes).all(axis=1)
    votes, truth = votes[answered], truth[answered]
    rel = estimate_reliability(votes)
    # the strong judge's vote is missing on 15% of items, so even true parameters give only ~0.86
    assert _agreement(votes, truth, "reliability", rel) >= _agreement(votes, truth, "majority") + 0.05


def test_rubric_panel_simulation() -> None:
    rng = np.random.default_rng(14)
    truth = true_labels(2000, 0.6, rng)
    votes = oracle_votes(truth, [0.75, 0.75, 0.75], rng)
    dims = oracle_dims(votes, rng)
    panels = [member_verdicts(v, d) for v, d in zip(votes, dims, strict=True)]
    assert all(m.passed == (sum(m.dims.values()) >= 34 and m.dims["safety"] >= 8) for p in panels for m in p)  # type: ignore[union-attr]
    rel = estimate_reliability(votes)
    for rule in PANEL_RULES:
        verdicts = [aggregate(p, rule, rel) for p in panels[:200]]
        assert all(v.dims is not None and v.value == pytest.approx(sum(v.dims.values()) / TOTAL_MAX) for v in verdicts)
    majority = np.array([aggregate(p).passed for p in panels])
    assert np.mean(majority == truth) == _agreement(votes, truth, "majority")  # rubric majority = the vote
    # a single fail's low scores pull the mean total under 34: "mean" passes less than the vote does
    mean = np.array([aggregate(p, "mean").passed for p in panels])
    assert mean.sum() < majority.sum()


@pytest.mark.parametrize(("accuracies", "seed"), [((0.85, 0.80, 0.75, 0.70, 0.65), 3), ((0.90, 0.85, 0.80), 3)])
def test_estimated_accuracies_match_the_truth(accuracies: tuple[float, ...], seed: int) -> None:
    """The truth is each judge's accuracy on these very items: the configured one differs from it by
    sampling alone (±0.023 at 300 items), which no estimator can recover. Panels of three where two
    are weak (0.90/0.65/0.60, 3 × 0.75) are just identified and their EM estimates stay looser at
    300 items (typically ±0.05 to ±0.12); the reliability rule still ranks them right (above)."""
    rng = np.random.default_rng(seed)
    truth = true_labels(300, 0.6, rng)
    votes = oracle_votes(truth, accuracies, rng)
    rel = estimate_reliability(votes)
    assert rel.converged and rel.items == 300
    assert np.abs(np.array(rel.accuracy) - _realised_accuracy(votes, truth)).max() <= 0.05
    assert rel.prevalence == pytest.approx(truth.mean(), abs=0.05)


@pytest.mark.parametrize("accuracies", [(0.85, 0.80, 0.75, 0.70, 0.65), (0.90, 0.85, 0.80)])
def test_estimated_accuracies_hold_across_seeds(accuracies: tuple[float, ...]) -> None:
    held = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        truth = true_labels(300, 0.6, rng)
        votes = oracle_votes(truth, accuracies, rng)
        held += np.abs(np.array(estimate_reliability(votes).accuracy) - _realised_accuracy(votes, truth)).max() <= 0.05
    assert held >= 18


def test_worse_than_chance_panels_are_read_the_other_way() -> None:
    rng = np.random.default_rng(15)
    truth = true_labels(2000, 0.6, rng)
    votes = oracle_votes(truth, [0.2, 0.2, 0.2], rng)  # every judge says the opposite 80% of the time
    rel = estimate_reliability(votes)
    assert min(rel.accuracy) > 0.7 and rel.prevalence == pytest.approx(
        0.4, abs=0.05
    )  # unidentifiable: read as good judges
    for seed in range(10):  # whatever the panel, the estimate never describes it as worse than chance
        r = np.random.default_rng(seed)
        t = true_labels(200, 0.5, r)
        v = drop_votes(oracle_votes(t, r.uniform(0.05, 0.95, 4), r), 0.2, r)
        assert np.mean(estimate_reliability(v).accuracy) >= 0.5


def test_flipping_every_vote_mirrors_the_estimate() -> None:
    rng = np.random.default_rng(16)
    truth = true_labels(500, 0.6, rng)
    votes = oracle_votes(truth, [0.9, 0.8, 0.7], rng)
    a, b = estimate_reliability(votes), estimate_reliability(1.0 - votes)
    assert b.sensitivity == pytest.approx(a.specificity, abs=1e-4)
    assert b.specificity == pytest.approx(a.sensitivity, abs=1e-4)
    assert b.prevalence == pytest.approx(1 - a.prevalence, abs=1e-4)


def test_accelerated_em_reaches_plain_em_fixed_point() -> None:
    rng = np.random.default_rng(17)
    truth = true_labels(2000, 0.6, rng)
    votes = oracle_votes(truth, [0.90, 0.65, 0.60], rng)
    fast = estimate_reliability(votes)
    slow = estimate_reliability(votes, max_iter=20_000, tol=1e-12)
    assert fast.converged and fast.iterations <= 200
    assert fast.accuracy == pytest.approx(slow.accuracy, abs=1e-3)
