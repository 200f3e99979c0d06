"""Rating fits over a whole scope's battles: win rates, Elo over many orders, Bradley–Terry with bootstrap intervals.

How this relates to ``eval``'s ratings module (``eval.win_rates``, ``eval.elo_ratings``): those are the
catalogue's definitions, one list of battles in, one rating per model out, in battle order. This module
builds the battles from per-item scores and fits them at scale — the same win rate, the same Elo update
played over many shuffled orders at once (each lane equals ``eval.elo_ratings`` on that order), and an
order-free Bradley–Terry fit with item-bootstrap intervals and ranks. Pure functions over arrays, no
files, no printing; :mod:`routing.boards.pairwise` turns a score table into its inputs.

Battles come from scores already there (no extra judge calls): for every item and every pair of
models that both have a score, the higher score wins and equal scores tie. They are held as an
*outcome matrix* ``O`` (items × pairs, int8: 0 first model wins, 1 second wins, 2 tie, −1 no
battle) and summarised as ``counts`` (pairs × 3). Identical outcomes are deduplicated into these
counts (as FastChat does), so a Bradley–Terry fit costs O(pairs), whatever the number of battles.

- Win rate (``eval.win_rates``' definition): points / games, a win 1, a tie ½ to each side.
- Online Elo: ``eval.elo_ratings`` over shuffled battle orders; the median and percentile interval
  over orders show how much the sequential rating depends on order alone. The orders are played
  side by side in arrays (one lane per order) with the same arithmetic, so each equals that function.
- Bradley–Terry: P(i beats j) = σ(θ_i − θ_j); ties count as half a win for each side. θ maximises
  Σ w·[y log σ(θ_a − θ_b) + (1 − y) log σ(θ_b − θ_a)] / Σw − (reg/2)·Σθ² by Newton's method,
  every bootstrap round in one batch (:func:`fit_bradley_terry_rounds`),
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
from scipy.special import expit

from eval import elo_ratings
from routing.stats.blas import single_threaded_blas
from routing.stats.intervals import LEVEL, percentile_ci, resample_count_chunks

ELO_SCALE = 400.0 / math.log(10.0)
WIN, LOSS, TIE, NONE = 0, 1, 2, -1
PAIR_CHUNK_ELEMENTS = 1 << 22
ELO_STEP_CHUNK = 256  # battle steps whose lane indices are gathered at once
NEWTON_FULL_STEP = 1e-10  # Newton decrement² under which the objective's rounding hides any decrease


def pair_index(m: int) -> tuple[np.ndarray, np.ndarray]:
    """(first, second) model index of every unordered pair i < j, in row-major order."""
    first, second = np.triu_indices(m, k=1)
    return first.astype(np.int64), second.astype(np.int64)


def outcome_matrix(values: np.ndarray) -> np.ndarray:
    """Items × pairs outcome codes from an items × models score matrix (finite scores, NaN = no score).

    Scores are first replaced by their rank within the item (equal scores, equal rank), so
    the pairs' comparisons read 2 bytes per score instead of subtracting floats; pair (i, j > i)
    columns come in blocks of one first model, a block of items at a time.
    """
    values = np.asarray(values, dtype=float)
    n, m = values.shape
    out = np.empty((n, m * (m - 1) // 2), dtype=np.int8)
    step = max(1, PAIR_CHUNK_ELEMENTS // max(m, 1))
    for start in range(0, n, step):
        ranks = _ranks_within_rows(values[start : start + step])
        missing = ranks < 0
        at = 0
        for i in range(m - 1):
            mine, others = ranks[:, i : i + 1], ranks[:, i + 1 :]
            block = out[start : start + step, at : at + m - 1 - i]
            np.less(mine, others, out=block, casting="unsafe")  # LOSS (1) where the first scored lower
            block += 2 * (mine == others)  # TIE (2); WIN (0) is what is left
            block[missing[:, i : i + 1] | missing[:, i + 1 :]] = NONE
            at += m - 1 - i
    return out


def _ranks_within_rows(values: np.ndarray) -> np.ndarray:
    """Per row, each score's dense rank among the row's scores (0 = lowest; equal scores share a
    rank) as int16 (int32 from 2^15 models); −1 for NaN."""
    dtype = np.int16 if values.shape[1] < 2**15 else np.int32
    order = np.argsort(values, axis=1, kind="stable")  # NaN sorts last
    ordered = np.take_along_axis(values, order, axis=1)
    climbs = np.zeros(ordered.shape, dtype=dtype)
    climbs[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    ranks = np.empty(values.shape, dtype=dtype)
    np.put_along_axis(ranks, order, np.cumsum(climbs, axis=1, dtype=dtype), axis=1)
    ranks[np.isnan(values)] = -1
    return ranks


def outcome_counts(outcomes: np.ndarray) -> np.ndarray:
    """(pairs × 3) counts of first-wins, second-wins, ties (a block of items at a time: no items × pairs
    temporaries)."""
    counts = np.zeros((outcomes.shape[1], 3), dtype=np.int64)
    step = max(1, PAIR_CHUNK_ELEMENTS // max(outcomes.shape[1], 1))
    for start in range(0, outcomes.shape[0], step):
        block = outcomes[start : start + step]
        for column, code in enumerate((WIN, LOSS, TIE)):
            counts[:, column] += (block == code).sum(axis=0)
    return counts.astype(float)


def bootstrap_outcome_counts(outcomes: np.ndarray, rounds: int, seed: int) -> np.ndarray:
    """(rounds × pairs × 3) counts over item resamples: tally matrix @ one-hot outcomes, in pair chunks."""
    n_items, n_pairs = outcomes.shape
    out = np.empty((rounds, n_pairs, 3))
    step = max(1, PAIR_CHUNK_ELEMENTS // max(3 * n_items, 1))
    # Every count is an integer sum below 2^24, exact in float32 whatever the order of summation, so
    # the resamples can come a chunk of rounds at a time (a large scope never holds rounds × items).
    for rows, tally in resample_count_chunks(n_items, rounds, seed):
        for start in range(0, n_pairs, step):
            block = outcomes[:, start : start + step]
            part = out[rows, start : start + block.shape[1], :]
            # a pair with a battle on every item has ties = items − wins − losses in every resample (a
            # resample draws n items), so only the others need a tie column
            gaps = np.flatnonzero((block == NONE).any(axis=0))
            onehot = np.stack([block == WIN, block == LOSS], axis=2).reshape(n_items, -1)
            part[:, :, :2] = (tally @ onehot.astype(np.float32)).reshape(tally.shape[0], -1, 2)
            part[:, :, TIE] = n_items - part[:, :, WIN] - part[:, :, LOSS]
            if len(gaps):
                part[:, gaps, TIE] = tally @ (block[:, gaps] == TIE).astype(np.float32)
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


def fit_bradley_terry(
    counts: np.ndarray, m: int, virtual_ties: float = 1.0, reg: float = 1e-8, start: np.ndarray | None = None
) -> np.ndarray:
    """θ (natural log-odds scale, mean 0) maximising the tie-as-half-win BT likelihood (see module doc)."""
    return fit_bradley_terry_rounds(np.asarray(counts, dtype=float)[None], m, virtual_ties, reg, start)[0]


def fit_bradley_terry_rounds(
    counts: np.ndarray,
    m: int,
    virtual_ties: float = 1.0,
    reg: float = 1e-8,
    start: np.ndarray | None = None,
    tol: float = 1e-12,
    max_iter: int = 200,
) -> np.ndarray:
    """θ (rounds × m, each row mean 0) for a stack of (rounds × pairs × 3) count tables, all fitted at once.

    The objective of every round is the module doc's: rows weighted by their counts (plus
    ``virtual_ties`` on every pair that met) over the round's total weight, and the ridge
    ``(reg/2)·Σθ²``. The three rows of a pair share d = θ_a − θ_b, so with the pair's weight W and
    its weighted wins-plus-half-ties Y the loss is Y·log(1 + e^−d) + (W − Y)·log(1 + e^d), its
    gradient in d is W·σ(d) − Y and its curvature W·σ(d)(1 − σ(d)). Newton's method with those
    per-pair sums (a graph Laplacian plus the ridge: m × m per round, solved as one batch) and a
    backtracking line search runs until every round's step is below ``tol``; the objective is
    strictly convex on the pairs that met, so that is its unique optimum, reached to rounding.

    Models fall into groups that are linked by battles (through other models); the likelihood does
    not see a shift of one group against another. A round where that happens (a bootstrap
    resample can miss every battle of a model) keeps each group's mean θ at ``start`` (default 0)
    and fits the rest, so an unseen model keeps its starting rating rather than one its absence
    says nothing about. ``start`` is (m,) or (rounds × m).
    """
    counts = np.array(counts, dtype=float).reshape(-1, m * (m - 1) // 2, 3)
    rounds = counts.shape[0]
    theta = np.zeros((rounds, m)) if start is None else np.array(np.broadcast_to(start, (rounds, m)), dtype=float)
    if rounds == 0 or m < 2:
        return theta - theta.mean(axis=-1, keepdims=True)
    first, second = pair_index(m)
    met = counts.sum(axis=2) > 0
    counts[..., TIE] += np.where(met, virtual_ties, 0.0)
    total = np.maximum(counts.sum(axis=(1, 2)), 1.0)[:, None]
    weight = counts.sum(axis=2) / total  # W per round and pair
    wins = (counts[..., WIN] + 0.5 * counts[..., TIE]) / total  # Y
    incidence = np.zeros((len(first), m))
    incidence[np.arange(len(first)), first] = 1.0
    incidence[np.arange(len(first)), second] = -1.0
    group = _linked_groups(met & (weight > 0), m, first, second)  # rounds × m × m: 1 where two models are linked
    group_size = group.sum(axis=2)
    diagonal = np.arange(m)

    def objective(th: np.ndarray, which: np.ndarray) -> np.ndarray:
        d = th[:, first] - th[:, second]
        y, w = wins[which], weight[which]
        # Y·log(1 + e^−d) + (W − Y)·log(1 + e^d) = W·log(1 + e^d) − Y·d
        return (w * np.logaddexp(0.0, d) - y * d).sum(axis=1) + 0.5 * reg * (th * th).sum(axis=1)

    value = objective(theta, np.arange(rounds))
    active = np.ones(rounds, dtype=bool)
    for _ in range(max_iter):
        idx = np.flatnonzero(active)
        if not len(idx):
            break
        th = theta[idx]
        p = expit(th[:, first] - th[:, second])
        w = weight[idx]
        grad = (w * p - wins[idx]) @ incidence + reg * th
        grad -= np.einsum("rij,rj->ri", group[idx], grad) / group_size[idx]  # keep every linked group's mean
        curve = w * p * (1.0 - p)
        spread = curve @ np.abs(incidence) + reg  # the Hessian's diagonal
        # the groups' means are held, so adding their indicator (at the diagonal's scale) keeps it invertible
        hessian = group[idx] * spread.mean(axis=1)[:, None, None]
        hessian[:, first, second] -= curve
        hessian[:, second, first] -= curve
        hessian[:, diagonal, diagonal] += spread
        step = -np.linalg.solve(hessian, grad[..., None])[..., 0]
        decrease = -(grad * step).sum(axis=1)  # Newton decrement², ≥ 0
        size = np.ones(len(idx))
        trial = th + step
        trial_value = objective(trial, idx)
        for _ in range(60):  # halve the step where the objective did not go down enough
            # (a decrement this small is within rounding of the objective: the full step is taken)
            short = (trial_value > value[idx] - 1e-4 * size * decrease) & (decrease > NEWTON_FULL_STEP)
            if not short.any():
                break
            size[short] *= 0.5
            trial[short] = th[short] + size[short, None] * step[short]
            trial_value[short] = objective(trial[short], idx[short])
        theta[idx], value[idx] = trial, trial_value
        active[idx] = np.abs(size[:, None] * step).max(axis=1) > tol
    return theta - theta.mean(axis=1, keepdims=True)


def _linked_groups(met: np.ndarray, m: int, first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """(rounds × m × m) 1.0 where two models are joined by a chain of pairs that met in that round
    (and on the diagonal)."""
    out = np.ones((met.shape[0], m, m))
    partial = np.flatnonzero(~met.all(axis=1))  # every pair met: one group, nothing to trace
    if len(partial):
        reach = np.zeros((len(partial), m, m))
        reach[:, first, second] = met[partial]
        reach[:, second, first] = met[partial]
        reach[:, np.arange(m), np.arange(m)] = 1.0
        for _ in range(max(1, int(np.ceil(np.log2(m))))):
            reach = (reach @ reach > 0).astype(float)
        out[partial] = reach
    return out


def elo_scale(theta: np.ndarray) -> np.ndarray:
    theta = np.asarray(theta, dtype=float)
    return 1000.0 + ELO_SCALE * (theta - theta.mean(axis=-1, keepdims=True))


def ranks_from_intervals(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """rank_i = 1 + #{j : lower_j > upper_i}."""
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    return 1 + (lower[None, :] > upper[:, None]).sum(axis=1)


def bradley_terry(
    counts: np.ndarray, boot_counts: np.ndarray, m: int, virtual_ties: float = 1.0, level: float = LEVEL
) -> dict[str, np.ndarray]:
    """Ratings (Elo scale), percentile CI over the bootstrap count tables, and CI-based ranks."""
    with single_threaded_blas():  # batches of small solves: see routing.stats.blas
        theta = fit_bradley_terry(counts, m, virtual_ties)
        draws = elo_scale(fit_bradley_terry_rounds(boot_counts, m, virtual_ties, start=theta))
    lower, upper = percentile_ci(draws, level)
    return {
        "rating": elo_scale(theta),
        "lower": lower,
        "upper": upper,
        "rank": ranks_from_intervals(lower, upper),
        "draws": draws,
    }


def elo_over_orders(
    first: Sequence[str],
    second: Sequence[str],
    score_first: Sequence[float],
    names: Sequence[str],
    rounds: int,
    k: float,
    seed: int,
    level: float = LEVEL,
) -> dict[str, np.ndarray]:
    """``eval.elo_ratings`` over ``rounds`` seeded shuffles of the battle order: median and CI per name.

    The orders are the seeded permutations ``eval.elo_ratings`` would be given one after another;
    :func:`sequential_elo` plays them all at once, with the same arithmetic, so every rating is the
    one ``eval.elo_ratings`` returns for that order. A name without a battle has no rating (NaN).
    """
    return elo_over_orders_many([(first, second, score_first, names)], rounds, k, seed, level)[0]


def elo_over_orders_many(
    games: Sequence[tuple[Sequence[str], Sequence[str], Sequence[float], Sequence[str]]],
    rounds: int,
    k: float,
    seed: int,
    level: float = LEVEL,
) -> list[dict[str, np.ndarray]]:
    """:func:`elo_over_orders` for several independent battle lists (first, second, score_first, names),
    each with its own seeded orders, played side by side in one pass (what a build's scopes need)."""
    k = float(k)
    plays, results = [], []
    for first, second, score_first, names in games:
        first, second = list(first), list(second)
        scores = [float(s) for s in score_first]
        if not len(first) == len(second) == len(scores):
            raise ValueError("first, second and score_first need one entry per battle")
        if any(isinstance(s, bool) or s not in (0.0, 0.5, 1.0) for s in score_first):
            raise ValueError("every score_first must be 1, 0.5 or 0")
        index = {name: i for i, name in enumerate(dict.fromkeys([*names, *first, *second]))}
        a = np.array([index[x] for x in first], dtype=np.int64)
        b = np.array([index[x] for x in second], dtype=np.int64)
        rng = np.random.default_rng([seed, len(scores)])
        orders = np.array([rng.permutation(len(scores)) for _ in range(rounds)], dtype=np.int64).reshape(
            rounds, len(scores)
        )
        if (a == b).any():  # a model against itself: eval.elo_ratings' own bookkeeping, one order at a time
            matches = [[x, y, s] for x, y, s in zip(first, second, scores, strict=True)]
            table = [elo_ratings([matches[i] for i in order], k) for order in orders]
            results.append(
                np.array([[t.get(name, np.nan) for name in names] for t in table]).reshape(rounds, len(names))
            )
        else:
            results.append(len(plays))
            plays.append((a, b, np.array(scores), orders, len(index)))
    played = sequential_elo_many(plays, k)
    out = []
    for (_, _, _, names), draws in zip(games, results, strict=True):
        draws = played[draws][:, : len(names)] if isinstance(draws, int) else draws
        lower, upper = percentile_ci(draws, level)
        out.append(
            {
                "median": np.nanmedian(draws, axis=0) if rounds else np.full(len(names), np.nan),
                "lower": lower,
                "upper": upper,
            }
        )
    return out


def sequential_elo(
    a: np.ndarray, b: np.ndarray, score_a: np.ndarray, orders: np.ndarray, k: float, m: int
) -> np.ndarray:
    """Online Elo from 1000 over every battle order at once: (orders × m) ratings, NaN for a model without a battle.

    Battle i is model ``a[i]`` against ``b[i]`` (different indices), ``score_a[i]`` ∈ {1, ½, 0};
    ``orders`` (rounds × battles) holds one permutation per row. See :func:`sequential_elo_many`.
    """
    return sequential_elo_many([(a, b, score_a, orders, m)], k)[0]


def sequential_elo_many(
    games: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]], k: float
) -> list[np.ndarray]:
    """:func:`sequential_elo` for several games (a, b, score_a, orders, m), all orders of all games in one pass.

    Every order of every game is a *lane* with its own m ratings (plus two spare slots). Step t
    plays battle t of every lane at once with ``eval.elo_ratings``' operations in its order —
    E = 1/(1 + 10^((R_b − R_a)/400)), R_a + k(s − E), R_b + k((1 − s) − (1 − E)) — so each lane
    equals that function's result on its order bit for bit (``float_power`` calls the C library's
    ``pow``, as Python's ``**`` does; ``np.power`` may use a vectorised approximation an ulp away).
    A lane whose game has run out of battles plays a tie between its spare slots, which changes
    nothing; lanes are sorted by length so finished games drop out of the arrays.
    """
    k = float(k)
    sizes = [int(orders.shape[1]) for _, _, _, orders, _ in games]
    by_length = sorted(range(len(games)), key=lambda g: -sizes[g])
    base, slots = {}, 0
    for g in by_length:
        base[g] = slots
        slots += games[g][3].shape[0] * (games[g][4] + 2)
    ratings = np.full(slots, 1000.0)
    total = max(sizes, default=0)
    for t0 in range(0, total, ELO_STEP_CHUNK):
        live = [g for g in by_length if sizes[g] > t0]
        steps = min(total, t0 + ELO_STEP_CHUNK) - t0
        lanes = sum(games[g][3].shape[0] for g in live)
        at_a, at_b = np.empty((steps, lanes), dtype=np.int64), np.empty((steps, lanes), dtype=np.int64)
        s_a = np.empty((steps, lanes))
        lane = 0
        for g in live:
            a, b, score_a, orders, m = games[g]
            width = m + 2
            start = base[g] + np.arange(orders.shape[0], dtype=np.int64) * width
            cols = slice(lane, lane + orders.shape[0])
            used = min(sizes[g] - t0, steps)
            chosen = orders[:, t0 : t0 + used]
            at_a[:used, cols] = (a[chosen] + start[:, None]).T
            at_b[:used, cols] = (b[chosen] + start[:, None]).T
            s_a[:used, cols] = score_a[chosen].T
            at_a[used:, cols] = start + m  # spare slots: a tie between equals moves nothing that is read
            at_b[used:, cols] = start + m + 1
            s_a[used:, cols] = 0.5
            lane += orders.shape[0]
        r_a, r_b, e, work = np.empty(lanes), np.empty(lanes), np.empty(lanes), np.empty(lanes)
        for t in range(steps):
            pa, pb, s = at_a[t], at_b[t], s_a[t]
            ratings.take(pa, out=r_a)
            ratings.take(pb, out=r_b)
            np.subtract(r_b, r_a, out=e)
            np.divide(e, 400.0, out=e)
            np.float_power(10.0, e, out=e)
            np.add(1.0, e, out=e)
            np.divide(1.0, e, out=e)  # expected score of a
            np.subtract(s, e, out=work)
            np.multiply(k, work, out=work)
            ratings.put(pa, np.add(r_a, work, out=work))
            np.subtract(1.0, s, out=work)  # 1 − s
            np.subtract(1.0, e, out=e)
            np.subtract(work, e, out=e)
            np.multiply(k, e, out=e)
            ratings.put(pb, np.add(r_b, e, out=e))
    out = []
    for g, (a, b, _, orders, m) in enumerate(games):
        lanes = ratings[base[g] : base[g] + orders.shape[0] * (m + 2)].reshape(orders.shape[0], m + 2)[:, :m].copy()
        played = np.zeros(m, dtype=bool)
        played[a] = played[b] = True
        lanes[:, ~played] = np.nan
        out.append(lanes)
    return out
