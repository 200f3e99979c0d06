"""Agreement statistics against published worked examples, a definitional (loop) implementation of the
coincidence matrix, and the degenerate inputs that have no defined value."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from routing.judges.agreement import (
    ALPHA_WARN,
    fleiss_kappa,
    fleiss_kappa_from_counts,
    krippendorff_alpha_interval,
    krippendorff_alpha_nominal,
)

N = np.nan
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: observers A–D (rows)
# × 12 units (columns), "." = missing. Published: nominal α = 0.743 (D_o = 0.200, D_e = 0.779),
# interval α = 0.849 (D_o = 0.433, D_e = 2.872).
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
        [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
    ]
).T

# Wikipedia, "Fleiss' kappa", worked example: 10 subjects × 5 categories, 14 raters each;
# P̄ = 0.378, P_e = 0.213, κ = 0.210.
WIKIPEDIA_FLEISS = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)

# Fleiss (1971), Psychological Bulletin 76(5), p. 379: 30 patients × 6 psychiatrists, 5 diagnoses;
# P̄ = 0.556, P_e = 0.220, κ = 0.430.
FLEISS_1971 = np.array(
    [
        [4, 4, 4, 4, 4, 4],
        [2, 2, 2, 5, 5, 5],
        [2, 3, 3, 3, 3, 5],
        [5, 5, 5, 5, 5, 5],
        [2, 2, 2, 4, 4, 4],
        [1, 1, 3, 3, 3, 3],
        [3, 3, 3, 3, 5, 5],
        [1, 1, 3, 3, 3, 4],
        [1, 1, 4, 4, 4, 4],
        [5, 5, 5, 5, 5, 5],
        [1, 4, 4, 4, 4, 4],
        [1, 2, 4, 4, 4, 4],
        [2, 2, 2, 3, 3, 3],
        [1, 4, 4, 4, 4, 4],
        [2, 2, 4, 4, 4, 5],
        [3, 3, 3, 3, 3, 5],
        [1, 1, 1, 4, 5, 5],
        [1, 1, 1, 1, 1, 2],
        [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 5, 5, 5],
        [5, 5, 5, 5, 5, 5],
        [2, 4, 4, 4, 4, 4],
        [2, 2, 4, 5, 5, 5],
        [1, 1, 4, 4, 4, 4],
        [1, 4, 4, 4, 4, 5],
        [2, 2, 2, 2, 2, 4],
        [1, 1, 1, 1, 5, 5],
        [2, 2, 4, 4, 4, 4],
        [1, 3, 3, 3, 3, 3],
        [5, 5, 5, 5, 5, 5],
    ],
    dtype=float,
)


def _alpha_by_definition(ratings: np.ndarray, interval: bool) -> float:
    """α from an explicitly built coincidence matrix, pair by pair (the paper's procedure)."""
    values = sorted({float(x) for x in ratings[~np.isnan(ratings)]})
    index = {v: i for i, v in enumerate(values)}
    o = np.zeros((len(values), len(values)))
    for unit in ratings:
        present = [float(x) for x in unit if not np.isnan(x)]
        if len(present) < 2:
            continue
        for a, b in itertools.permutations(range(len(present)), 2):
            o[index[present[a]], index[present[b]]] += 1.0 / (len(present) - 1)
    v = np.array(values)
    delta = (v[:, None] - v[None, :]) ** 2 if interval else (v[:, None] != v[None, :]).astype(float)
    n_c, n = o.sum(axis=1), o.sum()
    return 1.0 - (o * delta).sum() / n / ((np.outer(n_c, n_c) * delta).sum() / (n * (n - 1)))


def test_krippendorff_2011_published_values() -> None:
    assert krippendorff_alpha_nominal(KRIPPENDORFF_2011) == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha_interval(KRIPPENDORFF_2011) == pytest.approx(0.849, abs=5e-4)


def test_krippendorff_two_observers_binary_published_value() -> None:
    # Krippendorff (2011), section B: two observers, ten units, nominal α = 0.095.
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    assert krippendorff_alpha_nominal(np.array([a, b], dtype=float).T) == pytest.approx(0.095, abs=5e-4)


@pytest.mark.parametrize("seed", range(5))
def test_alpha_matches_the_pairwise_coincidence_matrix(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ratings = rng.integers(0, 6, (40, 5)).astype(float)
    ratings[rng.random(ratings.shape) < 0.3] = np.nan
    assert krippendorff_alpha_nominal(ratings) == pytest.approx(
        _alpha_by_definition(ratings, interval=False), abs=1e-12
    )
    assert krippendorff_alpha_interval(ratings) == pytest.approx(
        _alpha_by_definition(ratings, interval=True), abs=1e-12
    )
    fractional = ratings / 3.0  # interval α on non-integer values (e.g. a panel's mean scores)
    assert krippendorff_alpha_interval(fractional) == pytest.approx(
        _alpha_by_definition(fractional, interval=True), abs=1e-12
    )


def test_fleiss_published_values() -> None:
    assert fleiss_kappa_from_counts(WIKIPEDIA_FLEISS) == pytest.approx(0.210, abs=5e-4)
    assert fleiss_kappa(FLEISS_1971) == pytest.approx(0.430, abs=5e-4)


def test_fleiss_kappa_from_labels_equals_from_counts() -> None:
    labels = np.array([np.repeat(np.arange(5), row) for row in WIKIPEDIA_FLEISS], dtype=float)
    assert labels.shape == (10, 14)
    assert fleiss_kappa(labels) == pytest.approx(fleiss_kappa_from_counts(WIKIPEDIA_FLEISS), abs=1e-12)


def test_perfect_agreement_is_one() -> None:
    ratings = np.repeat(np.array([[1.0], [2.0], [3.0], [0.0], [2.5]]), 4, axis=1)
    ratings[0, 3] = np.nan
    assert krippendorff_alpha_nominal(ratings) == pytest.approx(1.0)
    assert krippendorff_alpha_interval(ratings) == pytest.approx(1.0)
    assert fleiss_kappa(ratings) == pytest.approx(1.0)


def test_missing_ratings_are_left_out() -> None:
    with_lone = np.vstack([KRIPPENDORFF_2011, [7, N, N, N], [N, N, N, N]])  # a unit rated once, one never
    assert krippendorff_alpha_nominal(with_lone) == krippendorff_alpha_nominal(KRIPPENDORFF_2011)
    assert krippendorff_alpha_interval(with_lone) == krippendorff_alpha_interval(KRIPPENDORFF_2011)
    # Fleiss' κ keeps only the units every rater labelled
    incomplete = np.vstack([FLEISS_1971, [1, 1, N, 2, 2, 3]])
    assert fleiss_kappa(incomplete) == fleiss_kappa(FLEISS_1971)


def test_degenerate_inputs_have_no_value() -> None:
    assert krippendorff_alpha_nominal(np.empty((0, 3))) is None
    assert krippendorff_alpha_interval(np.full((4, 3), np.nan)) is None
    only_lone = np.array([[1, N], [N, 2], [3, N]])
    assert krippendorff_alpha_nominal(only_lone) is None  # no unit has two ratings
    assert krippendorff_alpha_interval(only_lone) is None
    constant = np.full((5, 3), 4.0)  # D_e = 0: agreement, but indistinguishable from chance
    assert krippendorff_alpha_nominal(constant) is None
    assert krippendorff_alpha_interval(constant) is None
    assert fleiss_kappa(constant) is None  # P_e = 1
    assert fleiss_kappa(np.array([[1.0, 2.0, 1.0]])) is None  # one unit
    assert fleiss_kappa(np.array([[1.0], [2.0], [1.0]])) is None  # one rater
    assert fleiss_kappa(np.array([[1.0, N], [N, 2.0], [1.0, 1.0]])) is None  # one complete unit


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="units × raters"):
        krippendorff_alpha_nominal(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="same number of ratings on every unit: row 0 has 3, row 1 has 2"):
        fleiss_kappa_from_counts(np.array([[1, 2], [1, 1]]))


def test_thousands_of_units_chance_agreement_is_near_zero() -> None:
    rng = np.random.default_rng(7)
    ratings = rng.integers(0, 11, (20_000, 6)).astype(float)
    ratings[rng.random(ratings.shape) < 0.2] = np.nan
    for alpha in (krippendorff_alpha_nominal(ratings), krippendorff_alpha_interval(ratings)):
        assert alpha is not None and abs(alpha) < 0.01
    kappa = fleiss_kappa(ratings)
    assert kappa is not None and abs(kappa) < 0.01


def test_alpha_warning_threshold() -> None:
    assert ALPHA_WARN == 0.67
