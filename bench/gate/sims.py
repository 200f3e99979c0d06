"""Simulated nights with known truth for the regression gate: the oracle pool, re-drawn every night.

The pool: three models whose per-item correctness is drawn afresh every night, independently,
with fixed accuracies ``POOL`` (0.80, 0.65, 0.50), on ``N_ITEMS`` = 300 items; a "drop" lowers one
model's (the 0.65 one's) accuracy from a given night on. Each night is compared with the night
before exactly as ``routing.compare`` compares one bucket per model: the paired test of
:func:`routing.stats.intervals.paired_difference_test`, Holm over the three, significance at α,
the MDD of :func:`routing.nights.gate.detectable.minimum_detectable_drop` at α/3 and the status of
:func:`routing.nights.gate.detectable.gate_status`; the sequential gate is
:func:`routing.nights.gate.sequential.advance`, fed night by night. All draws are seeded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from routing.nights.gate.detectable import (
    POWER,
    REGRESSED,
    gate_status,
    mcnemar_power,
    minimum_detectable_drop,
    paired_t_power,
)
from routing.nights.gate.sequential import NightMean, advance, night_variance
from routing.stats.intervals import holm, paired_difference_test

POOL = (0.80, 0.65, 0.50)
N_ITEMS = 300
DROPPED = 1  # the model whose accuracy drops
ALPHA = 0.05


def draw_night(rng: np.random.Generator, accuracies: Sequence[float], n: int) -> np.ndarray:
    """models × items pass/fail, each item correct with its model's accuracy."""
    return (rng.random((len(accuracies), n)) < np.asarray(accuracies)[:, None]).astype(float)


def accuracies(drop: float) -> list[float]:
    return [p - drop if m == DROPPED else p for m, p in enumerate(POOL)]


def gate_night(
    before: np.ndarray, after: np.ndarray, alpha: float, min_drop: float, with_mdd: bool = True
) -> list[tuple[str, float]]:
    """(status, MDD) per model for one night's comparison (rows of ``before``/``after`` are models); without
    ``with_mdd`` only ``regressed`` is told apart (the MDD is NaN)."""
    tests = [paired_difference_test(a, b) for b, a in zip(before, after, strict=True)]
    adjusted = holm([p for p, _, _ in tests])
    level = alpha / len(tests)
    out = []
    for (_, diff, _), q, b, a in zip(tests, adjusted, before, after, strict=True):
        mdd = minimum_detectable_drop(b, a, level)[0] if with_mdd else math.nan
        out.append((gate_status(bool(q < alpha and diff != 0), diff, mdd, min_drop), mdd))
    return out


def fixed_n(sims: int, n: int, drop: float, min_drop: float, seed: int) -> dict[str, Any]:
    """``sims`` independent nights: before at POOL, after with ``drop`` on the dropped model."""
    rng = np.random.default_rng(seed)
    statuses, mdds, false_alarms = [], [], 0
    for _ in range(sims):
        words = gate_night(draw_night(rng, POOL, n), draw_night(rng, accuracies(drop), n), ALPHA, min_drop)
        false_alarms += any(s == REGRESSED for m, (s, _) in enumerate(words) if m != DROPPED or drop == 0)
        statuses.append(words[DROPPED][0])
        mdds.append(words[DROPPED][1])
    share = {s: statuses.count(s) / sims for s in sorted(set(statuses))}
    return {"sims": sims, "n": n, "drop": drop, "min_drop": min_drop, "false_alarm_rate": false_alarms / sims,
            "detected": share.get(REGRESSED, 0.0), "statuses": share, "mean_mdd": float(np.nanmean(mdds))}  # fmt: skip


def n_for_mdd(drop: float, p: float = POOL[DROPPED], level: float = ALPHA / len(POOL)) -> int:
    """The fewest items at which the exact McNemar power for ``drop`` from accuracy ``p`` reaches POWER."""
    q = p - drop
    psi = p * (1 - q) + q * (1 - p)  # the discordant share under the drop
    lo, hi = 2, 20_000
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if mcnemar_power(mid, psi, drop, level) >= POWER else (mid + 1, hi)
    return lo


def continuous_calibration(sims: int, drop: float, sd: float, seed: int) -> dict[str, Any]:
    """Paired-t MDD calibration: differences N(−drop, sd) at the n where the MDD equals ``drop`` (α/3)."""
    level = ALPHA / len(POOL)
    n = next(k for k in range(3, 20_000) if paired_t_power(k, sd, drop, level) >= POWER)
    rng = np.random.default_rng(seed)
    found, mdds = 0, []
    for _ in range(sims):
        base = rng.uniform(0.3, 0.9, size=n)
        new = base + rng.normal(-drop, sd, size=n)
        p, diff, _ = paired_difference_test(new, base)
        found += bool(p < level and diff < 0)  # a lone drop among three: Holm's first step
        mdds.append(minimum_detectable_drop(base, new, level)[0])
    return {"sims": sims, "n": n, "drop": drop, "sd": sd, "power": found / sims, "mean_mdd": float(np.mean(mdds))}


def sequence(
    rng: np.random.Generator,
    nights: int,
    n: int,
    drop: float,
    drop_from: int,
    reference_nights: int,
    min_drop: float,
) -> dict[str, Any]:
    """One sequence of ``nights`` comparisons (night 0 is the first run; the drop starts at night
    ``drop_from``): the first night the sequential gate, a naive repeated test of the same accumulated
    means, and the fixed-n gate each flag a regression, per model (None: never)."""
    from scipy.special import ndtri

    state: dict[str, Any] = {}
    before = draw_night(rng, POOL, n)
    first: dict[str, list[int | None]] = {k: [None] * len(POOL) for k in ("sequential", "naive", "fixed_n")}
    for t in range(1, nights + 1):
        after = draw_night(rng, accuracies(drop if t >= drop_from else 0.0), n)
        base_means, new_means = [], []
        for m in range(len(POOL)):
            variance = night_variance(float((after[m] - before[m]).var(ddof=1)), n)
            for side, values, run in ((base_means, before[m], t - 1), (new_means, after[m], t)):
                side.append(NightMean(f"m{m}", "sim/all", f"m{m}", f"night-{run}", float(values.mean()), variance, n))
        state, words = advance(
            state, base_means, new_means, data_fingerprint="sim", alpha=ALPHA, min_drop=min_drop,
            reference_nights=reference_nights,
        )  # fmt: skip
        fixed = gate_night(before, after, ALPHA, min_drop, with_mdd=False)
        z = float(ndtri(1 - words[0]["level"]))  # the sequential gate's level per side, as one fixed-sample test
        for m, word in enumerate(words):
            if word["status"] == REGRESSED and first["sequential"][m] is None:
                first["sequential"][m] = t
            if fixed[m][0] == REGRESSED and first["fixed_n"][m] is None:
                first["fixed_n"][m] = t
            nights_m = state["entries"][f"m{m}"]["nights"][reference_nights:]
            if nights_m and first["naive"][m] is None:  # reference mean − monitored mean against z·its SE
                mean = sum(x[1] for x in nights_m) / len(nights_m)
                se = math.sqrt(sum(x[2] for x in nights_m)) / len(nights_m)
                if word["reference_mean"] - mean > z * math.hypot(se, word["reference_se"]):
                    first["naive"][m] = t
        before = after
    return first


def sequential_rates(
    sims: int,
    nights: int,
    n: int,
    drop: float,
    drop_from: int,
    reference_nights: int,
    min_drop: float,
    seed: int,
) -> dict[str, Any]:
    """Over ``sims`` sequences: the share with any alarm on a healthy model (false alarms) per gate, and for the
    dropped model the share detected by the last night and the median nights from the drop to the alarm."""
    rng = np.random.default_rng(seed)
    runs = [sequence(rng, nights, n, drop, drop_from, reference_nights, min_drop) for _ in range(sims)]
    out: dict[str, Any] = {"sims": sims, "nights": nights, "n": n, "drop": drop, "drop_from": drop_from,
                           "reference_nights": reference_nights}  # fmt: skip
    for gate in ("sequential", "naive", "fixed_n"):
        healthy = [m for m in range(len(POOL)) if m != DROPPED or drop == 0]
        out[f"{gate}_false_alarm_rate"] = sum(any(r[gate][m] for m in healthy) for r in runs) / sims
        if drop:
            delays = [r[gate][DROPPED] - drop_from + 1 for r in runs if (r[gate][DROPPED] or 0) >= drop_from]
            out[f"{gate}_detected"] = len(delays) / sims
            out[f"{gate}_median_nights_to_detect"] = float(np.median(delays)) if delays else None
    return out
