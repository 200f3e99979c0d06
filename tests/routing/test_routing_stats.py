"""routing statistics as pure functions: bootstrap CIs, macro-F1 resampling, battles, Elo, Bradley–Terry."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from eval import elo_ratings, macro_f1, win_rates
from routing.stats.intervals import (
    bootstrap_means,
    bootstrap_ratios,
    estimate,
    intervals_overlap,
    percentile_ci,
    resample_counts,
    resample_indices,
    resampled_macro_f1,
)
from routing.stats.rating_fits import (
    LOSS,
    TIE,
    WIN,
    battle_counts,
    bootstrap_battle_counts,
    bootstrap_outcome_counts,
    bradley_terry,
    elo_over_orders,
    elo_scale,
    fit_bradley_terry,
    outcome_counts,
    outcome_matrix,
    overall_win_rates,
    pair_index,
    ranks_from_intervals,
    win_rate_matrix,
)


@pytest.mark.parametrize(("kind", "n"), [("bernoulli", 60), ("beta", 40)])
def test_bootstrap_ci_covers_the_true_mean_at_about_the_nominal_rate(kind: str, n: int) -> None:
    rng = np.random.default_rng(123)
    trials, covered = 200, 0
    true_mean = 0.3 if kind == "bernoulli" else 2 / (2 + 5)
    counts = resample_counts(n, 1000, 0)
    for _ in range(trials):
        sample = (rng.random(n) < 0.3).astype(float) if kind == "bernoulli" else rng.beta(2, 5, size=n)
        lo, hi = percentile_ci(bootstrap_means(sample, counts)[:, None])[:, 0]
        covered += lo <= true_mean <= hi
    assert 0.90 <= covered / trials <= 0.99, covered / trials


def test_resample_tallies_equal_gathering_by_index() -> None:
    rng = np.random.default_rng(1)
    values = rng.random((37, 3))
    values[rng.random((37, 3)) < 0.2] = np.nan
    idx, counts = resample_indices(37, 300, 5), resample_counts(37, 300, 5)
    assert idx.shape == counts.shape == (300, 37) and not idx.flags.writeable
    np.testing.assert_array_equal(counts.sum(axis=1), 37)
    gathered = np.nanmean(values[idx], axis=1)
    np.testing.assert_allclose(bootstrap_means(values, counts), gathered, rtol=1e-12)
    # a ratio statistic (Σunsupported / Σclaims) resamples numerator and denominator together
    num, den = rng.integers(0, 3, 37).astype(float), rng.integers(1, 6, 37).astype(float)
    np.testing.assert_allclose(bootstrap_ratios(num, den, counts), num[idx].sum(1) / den[idx].sum(1), rtol=1e-12)


def test_resampling_is_seeded_and_independent_of_call_order() -> None:
    resample_indices.cache_clear()
    a = resample_indices(20, 50, 7).copy()
    resample_indices(21, 50, 7)
    resample_indices.cache_clear()
    np.testing.assert_array_equal(a, resample_indices(20, 50, 7))
    assert not np.array_equal(a, resample_indices(20, 50, 8))


def test_macro_f1_bootstrap_matches_eval_macro_f1_on_each_resample() -> None:
    rng = np.random.default_rng(2)
    labels = ["a", "b", "c", "d"]
    golds = [labels[i] for i in rng.integers(0, 4, 50)]
    preds = [g if rng.random() < 0.6 else ("zzz" if rng.random() < 0.2 else labels[rng.integers(0, 4)]) for g in golds]
    index = {label: i for i, label in enumerate(labels)}
    gold_codes, pred_codes = np.array([index[g] for g in golds]), np.array([index.get(p, -1) for p in preds])
    idx = resample_indices(50, 40, 0)
    draws = resampled_macro_f1(gold_codes, pred_codes, 4, 40, 0)
    for b in range(40):
        expected = macro_f1([preds[i] for i in idx[b]], [golds[i] for i in idx[b]], labels)
        assert draws[b, 0] == pytest.approx(expected["macro_f1"], abs=1e-12)
        assert draws[b, 1] == pytest.approx(expected["accuracy"], abs=1e-12)


def test_macro_f1_bootstrap_leaves_out_items_a_cell_does_not_have() -> None:
    gold = np.array([0, 1, -1, 2, 1, -1, 0])  # -1: this model has no result for the item
    pred = np.array([0, 2, 1, 2, 1, 0, -1])
    idx = resample_indices(7, 30, 3)
    draws = resampled_macro_f1(gold, pred, 3, 30, 3)
    for b in range(30):
        kept = [i for i in idx[b] if gold[i] >= 0]
        expected = macro_f1([int(pred[i]) for i in kept], [int(gold[i]) for i in kept], [0, 1, 2])
        assert draws[b, 0] == pytest.approx(expected["macro_f1"]) and draws[b, 1] == pytest.approx(expected["accuracy"])


def test_estimate_and_overlap() -> None:
    est = estimate(0.5, np.array([0.4, 0.5, 0.6] * 10), 30)
    assert est.n == 30 and est.ci[0] == pytest.approx(0.4) and est.ci[1] == pytest.approx(0.6)
    assert est.to_json() == {"value": 0.5, "ci": [0.4, 0.6], "n": 30, "ci_method": "percentile"}
    assert intervals_overlap((0.1, 0.5), (0.5, 0.9)) and not intervals_overlap((0.1, 0.49), (0.5, 0.9))
    assert np.isnan(percentile_ci(np.full((10, 1), np.nan))).all()


def test_outcome_matrix_and_win_rates_agree_with_eval_win_rates() -> None:
    rng = np.random.default_rng(3)
    values = rng.integers(0, 4, size=(30, 4)).astype(float)
    values[rng.random((30, 4)) < 0.15] = np.nan
    names = ["m0", "m1", "m2", "m3"]
    outcomes = outcome_matrix(values)
    first, second = pair_index(4)
    verdicts = []
    for item in range(30):
        for p, (i, j) in enumerate(zip(first, second, strict=True)):
            if np.isnan(values[item, i]) or np.isnan(values[item, j]):
                assert outcomes[item, p] == -1
                continue
            verdict = "a" if values[item, i] > values[item, j] else "b" if values[item, i] < values[item, j] else "tie"
            assert outcomes[item, p] == {"a": WIN, "b": LOSS, "tie": TIE}[verdict]
            verdicts.append([names[i], names[j], verdict])
    counts = outcome_counts(outcomes)
    expected = win_rates(verdicts)
    np.testing.assert_allclose(overall_win_rates(counts, 4), [expected[n] for n in names])
    rate, games = win_rate_matrix(counts, 4)
    for i, j in zip(first, second, strict=True):
        pair = [v for v in verdicts if v[0] == names[i] and v[1] == names[j]]
        assert games[i, j] == games[j, i] == len(pair)
        assert rate[i, j] == pytest.approx(win_rates(pair)[names[i]]) and rate[i, j] + rate[j, i] == pytest.approx(1.0)
    # the battle-list route gives the same counts, whichever side a battle names first
    battles = [(names.index(v[0]), names.index(v[1]), {"a": WIN, "b": LOSS, "tie": TIE}[v[2]]) for v in verdicts]
    flipped = [(j, i, o if o == TIE else 1 - o) for i, j, o in battles]
    for listed in (battles, flipped):
        a, b, o = map(np.array, zip(*listed, strict=True))
        np.testing.assert_array_equal(battle_counts(a, b, o, 4), counts)


def test_item_bootstrap_counts_resample_whole_items() -> None:
    values = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    boot = bootstrap_outcome_counts(outcome_matrix(values), 200, 0)
    assert boot.shape == (200, 1, 3)
    np.testing.assert_array_equal(boot.sum(axis=(1, 2)), 3)  # three items, one battle each, per resample
    idx = resample_indices(3, 200, 0)
    np.testing.assert_array_equal(boot[:, 0, WIN], (idx == 0).sum(axis=1))


def simulate(strengths: np.ndarray, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    m = len(strengths)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + np.exp(-(strengths[a] - strengths[b])))
    return a, b, np.where(rng.random(n) < p, WIN, LOSS)


def test_bradley_terry_recovers_known_strengths() -> None:
    truth = np.array([-1.5, -0.8, -0.3, 0.0, 0.4, 0.9, 1.6])
    a, b, o = simulate(truth, 30_000, seed=4)
    counts = battle_counts(a, b, o, len(truth))
    theta = fit_bradley_terry(counts, len(truth))
    assert list(np.argsort(theta)) == list(np.argsort(truth))
    assert np.corrcoef(theta, truth)[0, 1] > 0.995
    np.testing.assert_allclose(theta, truth - truth.mean(), atol=0.08)
    result = bradley_terry(counts, bootstrap_battle_counts(counts, 50, 0), len(truth))
    scaled = elo_scale(truth)
    assert ((result["lower"] <= scaled + 25) & (scaled - 25 <= result["upper"])).all()
    assert list(result["rank"]) == [7, 6, 5, 4, 3, 2, 1]  # CIs well apart: every rank distinct


def test_bradley_terry_ties_count_half_and_separation_stays_finite() -> None:
    even = np.array([[0.0, 0.0, 40.0]])  # two models that always tie are equal
    np.testing.assert_allclose(fit_bradley_terry(even, 2), [0.0, 0.0], atol=1e-6)
    half = np.array(
        [[10.0, 0.0, 20.0]]
    )  # 10 wins + 20 ties = 20 of 30 points: θ gap ≈ log(20/10), one virtual tie aside
    gap = np.diff(fit_bradley_terry(half, 2, virtual_ties=0.0))[0]
    assert -gap == pytest.approx(np.log(2.0), abs=1e-4)
    sweep = fit_bradley_terry(np.array([[20.0, 0.0, 0.0]]), 2)
    assert np.isfinite(sweep).all() and -np.diff(sweep)[0] == pytest.approx(np.log(20.5 / 0.5), abs=1e-4)


def test_ranks_follow_non_overlapping_intervals() -> None:
    lower = np.array([1200, 1150, 900, 1190])
    upper = np.array([1300, 1250, 1000, 1210])
    assert list(ranks_from_intervals(lower, upper)) == [1, 1, 4, 1]


def test_elo_over_orders_uses_eval_elo_ratings() -> None:
    first, second, score = ["x", "x", "y"], ["y", "z", "z"], [1.0, 0.5, 0.0]
    result = elo_over_orders(first, second, score, ["x", "y", "z"], rounds=30, k=16, seed=0)
    orders = {
        tuple(sorted(elo_ratings([[a, b, s] for a, b, s in perm], 16).items()))
        for perm in itertools.permutations(zip(first, second, score, strict=True))
    }
    candidates = np.array([[dict(o)[n] for n in "xyz"] for o in orders])
    assert ((result["median"] >= candidates.min(0) - 1e-9) & (result["median"] <= candidates.max(0) + 1e-9)).all()
    again = elo_over_orders(first, second, score, ["x", "y", "z"], rounds=30, k=16, seed=0)
    np.testing.assert_array_equal(result["median"], again["median"])
    assert result["median"][1] == result["median"].min()  # y lost to x and to z; x and z both scored 1.5
    assert (result["lower"] <= result["median"]).all() and (result["median"] <= result["upper"]).all()
