"""P(met) against a known truth (``judge.calibration.probabilities``), by simulation: judges whose P(met)
is drawn from known distributions, so the AUC and the Youden-optimal cut are known in closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from judge.calibration.probabilities import (
    DEFAULT_THRESHOLD,
    choose_threshold,
    met_at,
    roc_auc,
    weighted_criteria_metrics,
)


def _logit_judge(n: int, met_mean: float, unmet_mean: float, seed: int) -> tuple[list[float], list[bool]]:
    """Half the criteria met; logit P(met) ~ N(met_mean, 1) when met, N(unmet_mean, 1) when not."""
    rng = np.random.default_rng(seed)
    truth = rng.random(n) < 0.5
    logits = np.where(truth, rng.normal(met_mean, 1.0, n), rng.normal(unmet_mean, 1.0, n))
    return list(1 / (1 + np.exp(-logits))), list(truth)


def test_the_auc_of_a_simulated_judge_is_the_closed_form_one() -> None:
    # two unit-variance normals Δ apart: AUC = Φ(Δ/√2)
    p, truth = _logit_judge(20_000, 0.4, -2.0, seed=1)
    assert roc_auc(p, truth) == pytest.approx(norm.cdf(2.4 / math.sqrt(2)), abs=0.01)  # 0.955
    p, truth = _logit_judge(20_000, 0.0, 0.0, seed=2)
    assert roc_auc(p, truth) == pytest.approx(0.5, abs=0.02)  # a judge whose P(met) says nothing


def test_the_auc_counts_ties_as_half_and_is_undefined_with_one_class() -> None:
    assert roc_auc([0.9, 0.1, 0.5, 0.5], [True, False, True, False]) == pytest.approx((1 + 1 + 1 + 0.5) / 4)
    assert roc_auc([0.2, 0.8, None], [True, True, False]) is None  # the only unmet one has no P(met)
    with pytest.raises(ValueError):
        roc_auc([1.2], [True])


def test_the_youden_threshold_of_a_simulated_judge_is_the_true_optimum() -> None:
    # equal variances: J is maximal where the densities cross, at the logits' midpoint −0.8 → P = 0.31
    p, truth = _logit_judge(20_000, 0.4, -2.0, seed=3)
    chosen = choose_threshold(p, truth)
    assert chosen is not None
    assert chosen.value == pytest.approx(1 / (1 + math.exp(0.8)), abs=0.03)
    best_j = 2 * norm.cdf(1.2) - 1  # sensitivity = specificity = Φ(1.2) at the optimum
    assert chosen.youden_j == pytest.approx(best_j, abs=0.02)
    # a well-calibrated judge needs no moving: its optimum stays at 0.5
    p, truth = _logit_judge(20_000, 1.0, -1.0, seed=4)
    assert choose_threshold(p, truth).value == pytest.approx(DEFAULT_THRESHOLD, abs=0.03)  # type: ignore[union-attr]


def test_a_perfectly_separating_judge_is_cut_between_its_classes() -> None:
    p = [0.05, 0.1, 0.2, 0.25] * 5 + [0.3, 0.4, 0.6] * 5
    truth = [False] * 20 + [True] * 15
    chosen = choose_threshold(p, truth)
    assert chosen is not None and chosen.value == pytest.approx(0.275) and chosen.youden_j == 1.0
    assert (chosen.criteria, chosen.met) == (35, 15)


def test_no_threshold_from_too_few_criteria_or_one_class() -> None:
    assert choose_threshold([0.2, 0.9] * 9, [False, True] * 9) is None  # 18 < 20
    assert choose_threshold([0.9] * 30, [True] * 30) is None
    assert choose_threshold([0.2, 0.9] * 9, [False, True] * 9, min_criteria=10) is not None
    assert choose_threshold([0.9, 0.2] * 15, [False, True] * 15) is None  # inverted: no cut beats chance


def test_the_weighted_metrics_sit_beside_the_plain_ones() -> None:
    truth = [{"T1": True, "T2": False, "W1": True, "N1": False}] * 6
    p_rows = [{"T1": 0.4, "T2": 0.2, "W1": 0.45, "N1": 0.1}] * 5 + [None]
    metrics = weighted_criteria_metrics(truth, p_rows, [0.5] * 3 + [1.0] * 3, [5.0, 5.5, 6.0, 8.0, 9.0, None])
    assert metrics is not None and metrics["criteria_with_p"] == 20
    assert metrics["auc"]["all"] == 1.0 and metrics["auc"]["topic"] == 1.0 and metrics["auc"]["forbidden"] is None
    assert metrics["at_default"]["topic"]["recall"] == 0.0  # P(met) 0.4 < 0.5: nothing met at 0.5
    assert metrics["threshold"]["value"] == pytest.approx(0.3) and metrics["at_threshold"]["topic"]["f1"] == 1.0
    assert metrics["holistic"]["scored"] == 5 and metrics["holistic"]["spearman"] == pytest.approx(math.sqrt(3) / 2)
    assert weighted_criteria_metrics(truth, [None] * 6, [0.5] * 6, [None] * 6) is None
    assert met_at([{"T1": 0.3}, None], 0.3) == [{"T1": True}, None]
