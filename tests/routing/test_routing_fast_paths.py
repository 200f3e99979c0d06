"""The array forms of the pairwise ratings and paired tests give the numbers of the simple forms they replace.

- Online Elo over many orders at once == ``eval.elo_ratings`` on each order, bit for bit.
- Bradley–Terry by batched Newton == a scipy L-BFGS-B fit of the same objective (the one the
  product used to run per bootstrap round), within the L-BFGS stopping error, and a stationary point.
- The direct paired t-test == ``scipy.stats.ttest_rel``, bit for bit; a decision's item matching ==
  ``np.intersect1d``.
- Outcome codes from ranks within an item == codes from subtracting scores; many columns' medians
  in one sort == ``np.median`` of each.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import ttest_rel

from eval import elo_ratings
from routing.boards.leaderboard import medians
from routing.decide.decision import Contestant, _common_items, decide
from routing.stats.intervals import LEVEL, paired_difference_test, paired_t_p_value, percentile_ci
from routing.stats.rating_fits import (
    ELO_SCALE,
    TIE,
    bootstrap_outcome_counts,
    bradley_terry,
    elo_over_orders,
    elo_over_orders_many,
    elo_scale,
    fit_bradley_terry,
    fit_bradley_terry_rounds,
    outcome_counts,
    outcome_matrix,
    pair_index,
    sequential_elo_many,
)

pytestmark = pytest.mark.filterwarnings("ignore:All-NaN slice encountered:RuntimeWarning")  # names without a battle

# --- online Elo ------------------------------------------------------------------------------------


def _random_games(rng: np.random.Generator, count: int) -> list[tuple[list[str], list[str], list[float], list[str]]]:
    games = []
    for _ in range(count):
        m = int(rng.integers(2, 9))
        n = int(rng.choice([0, 1, 7, 255, 256, 257, 500]))
        names = [f"m{i}" for i in range(m)] + ["absent"]  # "absent" never plays: NaN
        a = rng.integers(0, m, n)
        b = (a + rng.integers(1, m, n)) % m
        games.append(([names[i] for i in a], [names[i] for i in b], rng.choice([0.0, 0.5, 1.0], n).tolist(), names))
    return games


def test_float_power_is_pythons_pow() -> None:
    x = np.random.default_rng(0).uniform(-4.0, 4.0, 200_000)
    assert np.array_equal(np.float_power(10.0, x), np.array([10.0**v for v in x.tolist()]))


@pytest.mark.parametrize("seed", range(6))
def test_sequential_elo_equals_eval_elo_ratings_on_every_order(seed: int) -> None:
    rng = np.random.default_rng(seed)
    games = _random_games(rng, 5)
    plays = []
    for first, second, score, names in games:
        index = {name: i for i, name in enumerate(names)}
        orders = np.array([rng.permutation(len(score)) for _ in range(7)]).reshape(7, len(score))
        plays.append(
            (
                np.array([index[x] for x in first], dtype=np.int64),
                np.array([index[x] for x in second], dtype=np.int64),
                np.array(score),
                orders,
                len(names),
            )
        )
    ratings = sequential_elo_many(plays, 16.0)
    for (first, second, score, names), (_, _, _, orders, _), got in zip(games, plays, ratings, strict=True):
        matches = [[x, y, s] for x, y, s in zip(first, second, score, strict=True)]
        for order, row in zip(orders, got, strict=True):
            want = elo_ratings([matches[i] for i in order], 16.0)
            np.testing.assert_array_equal(row, [want.get(name, np.nan) for name in names])
        assert np.isnan(got[:, names.index("absent")]).all()


@pytest.mark.parametrize("seed", range(4))
def test_elo_over_orders_equals_eval_elo_ratings_over_the_same_seeded_orders(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    games = _random_games(rng, 4)
    rounds, k = 11, 24.0
    batched = elo_over_orders_many(games, rounds, k, seed)
    for (first, second, score, names), got in zip(games, batched, strict=True):
        order_rng = np.random.default_rng([seed, len(score)])  # the orders, drawn as the product draws them
        matches = [[x, y, s] for x, y, s in zip(first, second, score, strict=True)]
        draws = np.full((rounds, len(names)), np.nan)
        for r in range(rounds):
            played = elo_ratings([matches[i] for i in order_rng.permutation(len(matches))], k)
            draws[r] = [played.get(name, np.nan) for name in names]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the absent name: an all-NaN column
            median = np.nanmedian(draws, axis=0)
        lower, upper = percentile_ci(draws, LEVEL)
        np.testing.assert_array_equal(got["median"], median)
        np.testing.assert_array_equal(got["lower"], lower)
        np.testing.assert_array_equal(got["upper"], upper)
        single = elo_over_orders(first, second, score, names, rounds, k, seed)
        for key in ("median", "lower", "upper"):
            np.testing.assert_array_equal(single[key], got[key])


def test_elo_over_orders_rejects_scores_eval_rejects() -> None:
    with pytest.raises(ValueError):
        elo_over_orders(["x"], ["y"], [0.7], ["x", "y"], rounds=3, k=16, seed=0)


# --- Bradley–Terry ---------------------------------------------------------------------------------


def _lbfgs_fit(
    counts: np.ndarray, m: int, virtual_ties: float = 1.0, reg: float = 1e-8, start: np.ndarray | None = None
) -> np.ndarray:
    """The per-round scipy fit of the same objective (row form), as the product ran it before the batched solver."""
    first, second = pair_index(m)
    a, b = np.repeat(first, 3), np.repeat(second, 3)
    y = np.tile([1.0, 0.0, 0.5], len(first))
    counts = np.array(counts, dtype=float)
    counts[counts.sum(axis=1) > 0, TIE] += virtual_ties
    w = counts.ravel()
    keep = w > 0
    a, b, y, w = a[keep], b[keep], y[keep], w[keep] / max(w.sum(), 1.0)

    def loss_and_grad(theta: np.ndarray) -> tuple[float, np.ndarray]:
        d = theta[a] - theta[b]
        loss = float(np.dot(w, y * np.logaddexp(0.0, -d) + (1.0 - y) * np.logaddexp(0.0, d)))
        residual = w * (1.0 / (1.0 + np.exp(-d)) - y)
        grad = np.bincount(a, residual, minlength=m) - np.bincount(b, residual, minlength=m)
        return loss + 0.5 * reg * float(theta @ theta), grad + reg * theta

    x0 = np.zeros(m) if start is None else start
    result = minimize(
        loss_and_grad, x0, jac=True, method="L-BFGS-B", options={"maxiter": 1000, "ftol": 1e-12, "gtol": 1e-9}
    )
    return result.x - result.x.mean()


def _gradient(
    counts: np.ndarray, m: int, theta: np.ndarray, virtual_ties: float = 1.0, reg: float = 1e-8
) -> np.ndarray:
    first, second = pair_index(m)
    counts = np.array(counts, dtype=float)
    counts[counts.sum(axis=1) > 0, TIE] += virtual_ties
    counts /= max(counts.sum(), 1.0)
    residual = counts.sum(axis=1) / (1.0 + np.exp(-(theta[first] - theta[second]))) - (
        counts[:, 0] + 0.5 * counts[:, TIE]
    )
    return np.bincount(first, residual, minlength=m) - np.bincount(second, residual, minlength=m) + reg * theta


def _scores(seed: int, m: int, n: int, missing: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    strength = rng.normal(0.0, 1.0, m)
    values = (rng.random((n, m)) < 1.0 / (1.0 + np.exp(-strength))).astype(float)
    values[rng.random((n, m)) < missing] = np.nan
    return values


# The L-BFGS fits stop on a relative objective change of 1e-12, which leaves their gradients near
# 1e-8 and their ratings up to ~1e-3 Elo points from the optimum (the Newton fits reach gradients
# near 1e-17); agreement is checked to that stopping error.
LBFGS_ELO_TOLERANCE = 0.02


@pytest.mark.parametrize("seed", range(8))
def test_batched_newton_equals_lbfgs_on_every_bootstrap_round(seed: int) -> None:
    m = 3 + seed
    values = _scores(seed, m, 60 + 20 * seed, missing=0.3)
    outcomes = outcome_matrix(values)
    counts = outcome_counts(outcomes)
    boot = bootstrap_outcome_counts(outcomes, 25, seed)
    theta = fit_bradley_terry(counts, m)
    reference = _lbfgs_fit(counts, m)
    assert np.abs(elo_scale(theta) - elo_scale(reference)).max() < LBFGS_ELO_TOLERANCE
    assert np.abs(_gradient(counts, m, theta)).max() < 1e-12
    batched = fit_bradley_terry_rounds(boot, m, start=theta)
    for c, got in zip(boot, batched, strict=True):
        want = _lbfgs_fit(c, m, start=reference)
        assert np.abs(elo_scale(got) - elo_scale(want)).max() < LBFGS_ELO_TOLERANCE
        assert np.abs(_gradient(c, m, got)).max() < 1e-12
        np.testing.assert_allclose(
            got, fit_bradley_terry(c, m, start=theta), rtol=0, atol=1e-10
        )  # one at a time = batched
    result = bradley_terry(counts, boot, m)
    np.testing.assert_array_equal(result["rating"], elo_scale(theta))
    np.testing.assert_array_equal(result["draws"], elo_scale(batched))


def test_batched_newton_with_a_model_that_never_wins_and_pairs_that_never_met() -> None:
    m = 5
    values = _scores(7, m, 80, missing=0.0)
    values[:, 0] = -1.0  # model 0 loses every battle
    values[:40, 3] = np.nan  # models 3 and 4 answer disjoint halves: they never meet
    values[40:, 4] = np.nan
    outcomes = outcome_matrix(values)
    counts = outcome_counts(outcomes)
    first, second = pair_index(m)
    assert counts[(first == 3) & (second == 4)].sum() == 0
    assert counts[first == 0, 0].sum() == 0 and counts[second == 0, 1].sum() == 0
    theta = fit_bradley_terry(counts, m)
    assert np.isfinite(theta).all() and theta[0] == theta.min()
    assert np.abs(elo_scale(theta) - elo_scale(_lbfgs_fit(counts, m))).max() < LBFGS_ELO_TOLERANCE
    assert np.abs(_gradient(counts, m, theta)).max() < 1e-12
    boot = bootstrap_outcome_counts(outcomes, 20, 3)
    for c, got in zip(boot, fit_bradley_terry_rounds(boot, m, start=theta), strict=True):
        assert np.abs(elo_scale(got) - elo_scale(_lbfgs_fit(c, m, start=theta))).max() < LBFGS_ELO_TOLERANCE


def test_a_model_missing_from_a_resample_keeps_its_starting_rating() -> None:
    m = 4
    values = _scores(3, m, 40, missing=0.0)
    values[1:, 3] = np.nan  # model 3 answered one item: many resamples have none of its battles
    outcomes = outcome_matrix(values)
    counts = outcome_counts(outcomes)
    theta = fit_bradley_terry(counts, m)
    boot = bootstrap_outcome_counts(outcomes, 30, 0)
    first, second = pair_index(m)
    absent = boot[:, (first == 3) | (second == 3)].sum(axis=(1, 2)) == 0
    assert absent.any() and not absent.all()
    batched = fit_bradley_terry_rounds(boot, m, start=theta)
    for c, got, gone in zip(boot, batched, absent, strict=True):
        want = _lbfgs_fit(c, m, start=theta)  # L-BFGS leaves an unseen model where it started
        assert np.abs(elo_scale(got) - elo_scale(want)).max() < LBFGS_ELO_TOLERANCE
        if gone:  # the seen models' mean and the unseen one's rating are where they started
            assert got[3] - got[:3].mean() == pytest.approx(theta[3] - theta[:3].mean(), abs=1e-9)


def test_bradley_terry_elo_scale_and_ties() -> None:
    even = np.array([[0.0, 0.0, 40.0]])
    np.testing.assert_allclose(fit_bradley_terry(even, 2), [0.0, 0.0], atol=1e-12)
    gap = fit_bradley_terry(np.array([[20.0, 0.0, 0.0]]), 2)  # 20.5 of 21 points, one virtual tie aside
    assert (gap[0] - gap[1]) * ELO_SCALE == pytest.approx(
        ELO_SCALE * np.log(20.5 / 0.5), abs=1e-3
    )  # the ridge shrinks it a hair


# --- paired tests ----------------------------------------------------------------------------------


def test_paired_t_equals_scipy_ttest_rel_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    for trial in range(4000):
        n = int(rng.integers(2, 400))
        kind = trial % 4
        if kind == 0:
            a, b = rng.normal(size=n), rng.normal(size=n)
        elif kind == 1:
            a, b = rng.integers(0, 11, n) / 10, rng.integers(0, 11, n) / 10
        elif kind == 2:
            a = rng.random(n)
            b = a + rng.normal(0.02, 0.05, n)
        else:
            a = rng.uniform(0, 1e3, n)
            b = a + rng.normal(0, 1e-3, n)
        want = float(ttest_rel(a, b).pvalue)
        assert paired_t_p_value(a - b) == want
        if not ((a == 0) | (a == 1)).all() and np.ptp(a - b) > 1e-12 * max(1.0, float(np.abs(a - b).max())):
            assert paired_difference_test(a, b)[0] == want


def test_common_items_equal_intersect1d() -> None:
    rng = np.random.default_rng(1)
    for trial in range(3000):
        a = np.unique(rng.integers(0, 60, int(rng.integers(0, 40))))
        b = a.copy() if trial % 3 == 0 else np.unique(rng.integers(0, 60, int(rng.integers(0, 40))))
        if trial % 5 == 0:
            a = rng.integers(0, 10, len(a))  # not sorted or not distinct: intersect1d's own answer
        _, want_a, want_b = np.intersect1d(a, b, assume_unique=True, return_indices=True)
        got_a, got_b = _common_items(a, b)
        if got_a is None:
            got_a = got_b = np.arange(len(a))
        np.testing.assert_array_equal(got_a, want_a)
        np.testing.assert_array_equal(got_b, want_b)


def test_bootstrap_decision_needs_no_per_item_values() -> None:
    items = np.arange(30)
    draws = np.random.default_rng(2).normal(size=(2, 200))
    contestants = [
        Contestant(
            label=f"m{i}",
            key=f"m{i}",
            score=0.5 + 0.2 * i,
            ci=(0.4 + 0.2 * i, 0.6 + 0.2 * i),
            n=30,
            items=items,
            values=np.zeros(0),
            draws=draws[i] + 3.0 * i,
        )
        for i in range(2)
    ]
    decision = decide(contestants, 0.05, 5, "orchestrator", bootstrap=True)
    assert decision.pick.key == "m1" and decision.verdicts[1].n_paired == 30


@pytest.mark.parametrize(("n", "rounds"), [(1, 7), (13, 200), (1001, 33), (4096, 1000)])
def test_streamed_resamples_equal_the_cached_matrix(n: int, rounds: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Above the cache size the bootstrap draws its resamples chunk by chunk: the same numbers, bit for bit."""
    import routing.stats.intervals as stats

    rng = np.random.default_rng(n)
    num = np.where(rng.random((n, 3)) < 0.1, np.nan, rng.random((n, 3)))
    den = (~np.isnan(num)).astype(float)
    num = np.nan_to_num(num)
    monkeypatch.setattr(stats, "CHUNK_ELEMENTS", 1 << 12)  # many chunks, odd-sized ones included
    stats.resample_indices.cache_clear()
    stats.resample_counts.cache_clear()
    cached = stats.bootstrap_ratios(num, den, stats.resample_counts(n, rounds, 5))
    monkeypatch.setattr(stats, "CACHED_ELEMENTS", 0)
    streamed = stats.resampled_ratios(num, den, n, rounds, 5)
    assert np.array_equal(cached, streamed, equal_nan=True)
    monkeypatch.setattr(stats, "CACHED_ELEMENTS", 1 << 40)
    flat = stats.resampled_ratios(num[:, 0], den[:, 0], n, rounds, 5)
    monkeypatch.setattr(stats, "CACHED_ELEMENTS", 0)
    assert np.array_equal(stats.resampled_ratios(num[:, 0], den[:, 0], n, rounds, 5), flat, equal_nan=True)
    stats.resample_indices.cache_clear()
    stats.resample_counts.cache_clear()


@pytest.mark.parametrize("rows_per_block", [4096, 1])
def test_elo_battles_are_sampled_by_rank_without_listing_every_battle(
    rows_per_block: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sampled battles' positions equal ``flatnonzero(outcomes != NONE)[ranks]``, block boundaries included."""
    from routing.boards.pairwise import _battle_positions, _battles_per_item
    from routing.stats.rating_fits import NONE

    monkeypatch.setattr("routing.boards.pairwise.ELO_ROWS", rows_per_block)
    rng = np.random.default_rng(0)
    for _ in range(30):
        items, pairs = int(rng.integers(1, 9000)), int(rng.integers(1, 60))
        outcomes = rng.integers(-1, 3, size=(items, pairs)).astype(np.int8)
        outcomes[rng.random(items) < 0.2] = NONE
        flat = np.flatnonzero(outcomes.ravel() != NONE)
        if not len(flat):
            continue
        ranks = np.sort(rng.choice(len(flat), size=min(len(flat), 500), replace=False))
        assert np.array_equal(_battle_positions(outcomes, _battles_per_item(outcomes), ranks), flat[ranks])


def test_item_bootstrap_counts_streamed_equal_the_cached_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bradley–Terry's resampled outcome counts are exact integers: streamed rounds give the same tables."""
    import routing.stats.intervals as stats
    from routing.stats.rating_fits import bootstrap_outcome_counts, outcome_matrix

    rng = np.random.default_rng(3)
    values = np.where(rng.random((997, 7)) < 0.1, np.nan, np.round(rng.random((997, 7)) * 4) / 4)
    outcomes = outcome_matrix(values)
    monkeypatch.setattr(stats, "CHUNK_ELEMENTS", 1 << 13)
    stats.resample_indices.cache_clear()
    stats.resample_counts.cache_clear()
    cached = bootstrap_outcome_counts(outcomes, 40, 2)
    monkeypatch.setattr(stats, "CACHED_ELEMENTS", 0)
    assert np.array_equal(bootstrap_outcome_counts(outcomes, 40, 2), cached)
    stats.resample_indices.cache_clear()
    stats.resample_counts.cache_clear()


# --- outcome codes and medians -----------------------------------------------------------------


def _outcomes_by_subtraction(values: np.ndarray) -> np.ndarray:
    """The definition: first − second > 0 wins, < 0 loses, 0 ties, NaN no battle."""
    first, second = pair_index(values.shape[1])
    diff = values[:, first] - values[:, second]
    code = np.where(diff > 0, 0, np.where(diff < 0, 1, TIE)).astype(np.int8)
    code[np.isnan(diff)] = -1
    return code


@pytest.mark.parametrize("shape", [(0, 4), (1, 2), (7, 3), (300, 1), (2_000, 23)])
def test_outcome_codes_by_rank_equal_the_codes_by_subtraction(
    shape: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(shape[1])
    values = rng.integers(0, 5, shape) / 4.0  # many ties
    values[rng.random(shape) < 0.15] = np.nan
    values[values == 0.0] = np.where(rng.random(int((values == 0.0).sum())) < 0.5, -0.0, 0.0)  # −0 ties +0
    continuous = rng.random(shape)
    for scores in (values, continuous):
        expected = _outcomes_by_subtraction(scores)
        np.testing.assert_array_equal(outcome_matrix(scores), expected)
        monkeypatch.setattr("routing.stats.rating_fits.PAIR_CHUNK_ELEMENTS", 50)  # items a few rows at a time
        np.testing.assert_array_equal(outcome_matrix(scores), expected)
        monkeypatch.undo()


def test_medians_of_many_columns_equal_np_median() -> None:
    rng = np.random.default_rng(5)
    columns = [rng.random(n) for n in (0, 1, 2, 5, 8, 101)] + [np.full(3, np.nan), np.array([2.0, np.nan, 1.0, 4.0])]
    columns.append(rng.integers(0, 9, 40).astype(np.float32))  # a narrowed column keeps its dtype's arithmetic
    expected = [float(np.median(c[~np.isnan(c)])) if (~np.isnan(c)).any() else float("nan") for c in columns]
    np.testing.assert_array_equal(medians(columns), expected)
    assert medians([]) == []
