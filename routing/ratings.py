"""Pairwise ratings from per-item scores: pure functions over arrays, no files, no printing.

Battles come from scores already there (no extra judge calls): for every item and every pair of
models that both have a score, the higher score wins and equal scores tie. They are held as an
*outcome matrix* ``O`` (items × pairs, int8: 0 first model wins, 1 second wins, 2 tie, −1 no
battle) and summarised as ``counts`` (pairs × 3). Identical outcomes are deduplicated into these
counts (as FastChat does), so a Bradley–Terry fit costs O(pairs), whatever the number of battles.

- Win rate (``eval.win_rates``' definition): points / games, a win 1, a tie ½ to each side.
- Online Elo: ``eval.elo_ratings`` over shuffled battle orders; the median and percentile interval
  over orders show how much the sequential rating depends on order alone.
- Bradley–Terry: P(i beats j) = σ(θ_i − θ_j); ties count as half a win for each side. θ maximises
  Σ w·[y log σ(θ_a − θ_b) + (1 − y) log σ(θ_b − θ_a)] / Σw − (reg/2)·Σθ² with L-BFGS (scipy),
  where every pair that met also gets ``virtual_ties`` (default 1) tied battles: without them a
  model that beats another on every item — common when battles come from a handful of items — has
  an infinite MLE; with them the gap stays finite (20 wins of 20: 3.7 logits ≈ 645 points), and
  their weight vanishes once a pair has hundreds of battles. The tiny ridge ``reg`` only pins the
  free shift. Reported on the Elo scale: rating = 1000 + (400 / ln 10)·(θ − mean θ).
- Bootstrap: item-level (resample items, the battles of an item stay together, because one hard
  item decides many battles at once) through the same seeded resample tallies as the leaderboard
  CIs; or battle-level (multinomial over the deduplicated counts) when there are no items.
- Rank = 1 + the number of models whose lower bound exceeds this model's upper bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import minimize

from eval import elo_ratings
from routing.blas import single_threaded_blas
from routing.stats import LEVEL, percentile_ci, resample_counts

ELO_SCALE = 400.0 / math.log(10.0)
WIN, LOSS, TIE, NONE = 0, 1, 2, -1
PAIR_CHUNK_ELEMENTS = 1 << 22


def pair_index(m: int) -> tuple[np.ndarray, np.ndarray]:
    """(first, second) model index of every unordered pair i < j, in row-major order."""
    first, second = np.triu_indices(m, k=1)
    return first.astype(np.int64), second.astype(np.int64)


def outcome_matrix(values: np.ndarray) -> np.ndarray:
    """Items × pairs outcome codes from an items × models score matrix (NaN = no score)."""
    values = np.asarray(values, dtype=float)
    first, second = pair_index(values.shape[1])
    out = np.empty((values.shape[0], len(first)), dtype=np.int8)
    step = max(1, PAIR_CHUNK_ELEMENTS // max(values.shape[0], 1))
    for start in range(0, len(first), step):
        part = slice(start, start + step)
        diff = values[:, first[part]] - values[:, second[part]]
        code = np.where(diff > 0, WIN, np.where(diff < 0, LOSS, TIE)).astype(np.int8)
        code[np.isnan(diff)] = NONE
        out[:, part] = code
    return out


def outcome_counts(outcomes: np.ndarray) -> np.ndarray:
    """(pairs × 3) counts of first-wins, second-wins, ties."""
    return np.stack([(outcomes == code).sum(axis=0) for code in (WIN, LOSS, TIE)], axis=1).astype(float)


def bootstrap_outcome_counts(outcomes: np.ndarray, rounds: int, seed: int) -> np.ndarray:
    """(rounds × pairs × 3) counts over item resamples: tally matrix @ one-hot outcomes, in pair chunks."""
    n_items, n_pairs = outcomes.shape
    tally = resample_counts(n_items, rounds, seed)
    out = np.empty((rounds, n_pairs, 3))
    step = max(1, PAIR_CHUNK_ELEMENTS // max(3 * n_items, 1))
    for start in range(0, n_pairs, step):
        block = outcomes[:, start:start + step]
        onehot = np.stack([block == code for code in (WIN, LOSS, TIE)], axis=2).reshape(n_items, -1)
        out[:, start:start + block.shape[1], :] = (tally @ onehot.astype(np.float32)).reshape(rounds, -1, 3)
    return out


def battle_counts(first: np.ndarray, second: np.ndarray, outcome: np.ndarray, m: int) -> np.ndarray:
    """(pairs × 3) counts from a battle list: model indices and codes WIN/LOSS/TIE seen from ``first``."""
    first, second, outcome = (np.asarray(x, dtype=np.int64) for x in (first, second, outcome))
    if ((first == second) | (first < 0) | (second < 0) | (first >= m) | (second >= m)).any():
        raise ValueError("battles need two different model indices in [0, m)")
    swap = first > second
    lo, hi = np.where(swap, second, first), np.where(swap, first, second)
    code = np.where(swap & (outcome != TIE), 1 - outcome, outcome)
    pair = lo * m - lo * (lo + 1) // 2 + (hi - lo - 1)  # row-major position of (lo, hi) among i < j pairs
    n_pairs = m * (m - 1) // 2
    return np.bincount(pair * 3 + code, minlength=3 * n_pairs).reshape(n_pairs, 3).astype(float)


def bootstrap_battle_counts(counts: np.ndarray, rounds: int, seed: int) -> np.ndarray:
    """(rounds × pairs × 3): resampling battles with replacement = a multinomial over the distinct outcomes."""
    total = int(counts.sum())
    rng = np.random.default_rng([seed, total])
    draws = rng.multinomial(total, counts.ravel() / total, size=rounds)
    return draws.reshape(rounds, *counts.shape).astype(float)


def win_rate_matrix(counts: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """(rate[i, j] = points of i against j / games, games[i, j]); NaN where they never met."""
    first, second = pair_index(m)
    games = np.zeros((m, m))
    points = np.zeros((m, m))
    total = counts.sum(axis=1)
    games[first, second] = games[second, first] = total
    points[first, second] = counts[:, WIN] + 0.5 * counts[:, TIE]
    points[second, first] = counts[:, LOSS] + 0.5 * counts[:, TIE]
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(games > 0, points / np.where(games > 0, games, 1.0), np.nan)
    return rate, games


def overall_win_rates(counts: np.ndarray, m: int) -> np.ndarray:
    """Per model: all points / all games (``eval.win_rates`` over the same battles); NaN with no game."""
    rate, games = win_rate_matrix(counts, m)
    points = np.nansum(rate * games, axis=1)
    played = games.sum(axis=1)
    return np.where(played > 0, points / np.where(played > 0, played, 1.0), np.nan)


def _bt_rows(counts: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    first, second = pair_index(m)
    a = np.repeat(first, 3)
    b = np.repeat(second, 3)
    y = np.tile([1.0, 0.0, 0.5], len(first))
    return a, b, y


def fit_bradley_terry(counts: np.ndarray, m: int, virtual_ties: float = 1.0, reg: float = 1e-8,
                      start: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """θ (natural log-odds scale, mean 0) maximising the tie-as-half-win BT likelihood (see module doc)."""
    a, b, y = _bt_rows(counts, m)
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
    result = minimize(loss_and_grad, x0, jac=True, method="L-BFGS-B",
                      options={"maxiter": 1000, "ftol": 1e-12, "gtol": 1e-9})  # fmt: skip
    return result.x - result.x.mean()


def elo_scale(theta: np.ndarray) -> np.ndarray:
    theta = np.asarray(theta, dtype=float)
    return 1000.0 + ELO_SCALE * (theta - theta.mean(axis=-1, keepdims=True))


def ranks_from_intervals(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """rank_i = 1 + #{j : lower_j > upper_i}."""
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    return 1 + (lower[None, :] > upper[:, None]).sum(axis=1)


def bradley_terry(counts: np.ndarray, boot_counts: np.ndarray, m: int, virtual_ties: float = 1.0,
                  level: float = LEVEL) -> dict[str, np.ndarray]:  # fmt: skip
    """Ratings (Elo scale), percentile CI over the bootstrap count tables, and CI-based ranks."""
    with single_threaded_blas():  # many tiny L-BFGS-B fits: see routing.blas
        theta = fit_bradley_terry(counts, m, virtual_ties)
        draws = np.stack([elo_scale(fit_bradley_terry(c, m, virtual_ties, start=theta)) for c in boot_counts])
    lower, upper = percentile_ci(draws, level)
    return {"rating": elo_scale(theta), "lower": lower, "upper": upper, "rank": ranks_from_intervals(lower, upper), "draws": draws}


def elo_over_orders(first: Sequence[str], second: Sequence[str], score_first: Sequence[float], names: Sequence[str],
                    rounds: int, k: float, seed: int, level: float = LEVEL) -> dict[str, np.ndarray]:  # fmt: skip
    """``eval.elo_ratings`` over ``rounds`` seeded shuffles of the battle order: median and CI per name."""
    matches = [[a, b, s] for a, b, s in zip(first, second, score_first)]
    rng = np.random.default_rng([seed, len(matches)])
    draws = np.full((rounds, len(names)), np.nan)
    for r in range(rounds):
        ratings = elo_ratings([matches[i] for i in rng.permutation(len(matches))], k)
        draws[r] = [ratings.get(name, np.nan) for name in names]
    lower, upper = percentile_ci(draws, level)
    return {"median": np.nanmedian(draws, axis=0) if rounds else np.full(len(names), np.nan), "lower": lower, "upper": upper}
