"""The item bank (routing.bank): the 2PL fit recovers known parameters, a reversed item is listed, an
adaptive test's interval holds the full-suite score (also for a model stronger than every model the bank was
fitted on), the bank's curve check, and an estimated model is never a decision's pick."""

from __future__ import annotations

import numpy as np

from routing.bank.adaptive import AdaptiveTest, CurveCheck
from routing.bank.estimates import mark_leaderboard, mark_manifest
from routing.bank.history import FamilyMatrix, fit_bank
from routing.bank.irt import fit_2pl, negative_discrimination, probability


def _bank(models: int = 20, items: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a, b, theta = np.exp(rng.normal(0.2, 0.3, items)), rng.normal(0, 1, items), rng.normal(0, 1, models)
    return a, b, theta, (rng.random((models, items)) < probability(a, b, theta)).astype(float)


def test_the_fit_recovers_abilities_and_difficulties() -> None:
    a, b, theta, y = _bank()
    fit = fit_2pl(y)
    assert fit.converged
    assert np.corrcoef(fit.theta, theta)[0, 1] > 0.98
    assert np.corrcoef(fit.b, b)[0, 1] > 0.85  # 20 answers per item: difficulties are the noisier half
    assert (fit.a > 0).all()


def test_a_reversed_item_is_listed_as_negative_discrimination() -> None:
    a, b, theta, y = _bank(models=30, seed=1)
    order = np.argsort(theta)
    y[:, 7] = 0.0
    y[order[15:], 7] = 0.0
    y[order[:15], 7] = 1.0  # the weaker half passes, the stronger half fails: a wrong gold
    matrix = FamilyMatrix("exam", tuple(f"m{i}" for i in range(30)), tuple(f"i{j}" for j in range(400)), y)
    bank = fit_bank(matrix, min_models=8)
    assert not isinstance(bank, str)
    assert "i7" in bank.negative
    assert negative_discrimination(y, bank.fit.theta)[7] < 0


def test_too_few_models_is_said_not_fitted() -> None:
    *_, y = _bank(models=5)
    matrix = FamilyMatrix("exam", tuple(f"m{i}" for i in range(5)), tuple(f"i{j}" for j in range(400)), y)
    assert "5 fully evaluated model(s) in the history, 8 needed" in fit_bank(matrix)


def test_an_adaptive_estimate_holds_the_full_score_from_a_tenth_of_the_items() -> None:
    a, b, theta, y = _bank(models=30, items=1000, seed=2)
    matrix = FamilyMatrix("exam", tuple(f"m{i}" for i in range(30)), tuple(f"i{j}" for j in range(1000)), y)
    held = []
    for i in range(6):  # each in turn plays the new model: 95% intervals, so one miss in six is allowed
        bank = fit_bank(matrix, leave_out=[f"m{i}"])
        assert not isinstance(bank, str)
        estimate = _adaptive_estimate(bank, y[i], budget=100)
        assert estimate.items_used == 100
        assert estimate.high - estimate.low < 0.15
        assert abs(estimate.score - y[i].mean()) < 0.05
        held.append(estimate.low <= y[i].mean() <= estimate.high)
    assert sum(held) >= 5, held


def _adaptive_estimate(bank, answers: np.ndarray, budget: int, *, checked: bool = True):
    check = bank.check if checked else None
    test = AdaptiveTest(bank.fit.a, bank.fit.b, budget=budget, target_se=0.0, seed=0, check=check)
    while not test.done():
        for j in test.next_items(4):
            test.tell(j, answers[j])
    return test.estimate()


def test_a_model_stronger_than_the_whole_history_is_held_by_a_wider_interval() -> None:
    """Eight history models of ability −1…1 and a new one at 2.5: the bank's curves are extrapolated
    there, and the interval says so (the bank's curve check widens it more than in the middle) and
    holds the full-suite score."""
    rng = np.random.default_rng(3)
    a, b = np.exp(rng.normal(0.2, 0.4, 800)), rng.normal(0, 1.2, 800)
    theta = np.array([*np.linspace(-1.0, 1.0, 8), 2.5, 0.0])
    y = (rng.random((10, 800)) < probability(a, b, theta)).astype(float)
    matrix = FamilyMatrix("exam", tuple(f"m{i}" for i in range(10)), tuple(f"i{j}" for j in range(800)), y)
    bank = fit_bank(matrix, leave_out=["m8", "m9"])
    assert not isinstance(bank, str)
    strong, middle = _adaptive_estimate(bank, y[8], budget=80), _adaptive_estimate(bank, y[9], budget=80)
    assert strong.low <= y[8].mean() <= strong.high
    assert middle.low <= y[9].mean() <= middle.high

    def widening(estimate, answers):
        plain = _adaptive_estimate(bank, answers, budget=80, checked=False)
        return (estimate.high - estimate.low) / (plain.high - plain.low)

    assert widening(strong, y[8]) > widening(middle, y[9]) >= 1.0


def test_the_curve_check_is_silent_when_the_bank_predicts_the_history_exactly() -> None:
    predicted = np.linspace(0.1, 0.9, 12)
    check = CurveCheck.fit(predicted, predicted)
    gap, gap_var = check.discrepancy(np.array([0.05, 0.5, 0.95]))
    assert np.allclose(gap, 0.0, atol=1e-9) and np.allclose(gap_var, 0.0, atol=1e-9)
    bent = CurveCheck.fit(predicted, predicted + 0.02 * (predicted - 0.5))  # the bank bends too far
    assert bent.discrepancy(np.array([0.95]))[0][0] > 0


def _decision(model: str, *others: str) -> dict:
    cands = [{"model": m, "score": 0.9 - 0.1 * i} for i, m in enumerate((model, *others))]
    return {"model": model, "decisive": True, "tied_top": [model], "candidates": cands, "chosen_by": "paired_test"}


def test_an_estimated_model_is_never_a_decisions_pick() -> None:
    estimates = {"new": {"exam": {"score": 90.0, "low": 85.0, "high": 95.0, "estimated": True}}}
    manifest = {
        "models": {"new": {"name": "new"}, "old": {"name": "old"}},
        "default": _decision("new", "old"),
        "families": {"exam": _decision("new", "old")},
        "orchestrator": _decision("old", "new"),
        "buckets": {
            "exam/task/T1": {**_decision("new", "old"), "family": "exam", "served_by": "exam/task/T1"},
            "exam/task/T2": {**_decision("new"), "family": "exam", "served_by": "exam/task/T2"},
            "exam/task/T3": {"family": "exam", "model": "new", "chosen_by": "fallback", "served_by": "exam"},
        },
    }
    mark_manifest(manifest, estimates)
    buckets = manifest["buckets"]
    for block in (manifest["default"], manifest["families"]["exam"], buckets["exam/task/T1"]):
        assert block["model"] == "old" and block["decisive"] is False and block["estimated_leader"] == "new"
        assert [c.get("estimated", False) for c in block["candidates"]] == [True, False]
    assert buckets["exam/task/T2"]["decisive"] is False  # no fully evaluated model: kept, never decisive
    assert buckets["exam/task/T3"]["model"] == "old"  # a fallback follows the fixed parent
    assert manifest["orchestrator"]["model"] == "old" and manifest["orchestrator"]["decisive"] is True
    leaderboard = {
        "models": manifest["models"],
        "families": {"exam": [{"cells": [{"model": "new"}, {"model": "old"}]}]},
    }
    mark_leaderboard(leaderboard, estimates)
    assert leaderboard["estimated"] == estimates
    assert [c.get("estimated", False) for c in leaderboard["families"]["exam"][0]["cells"]] == [True, False]
