"""Intervals, paired tests and the bucket bootstrap: pure functions over arrays.

**Intervals** (what a cell's ``ci`` is; its ``ci_method`` names the rule):

- ``wilson``: a proportion (every value 0 or 1): the Wilson score interval with continuity
  correction (Newcombe 1998; scipy's ``binomtest(k, n).proportion_ci(method="wilsoncc")``, here in
  closed form so it runs over arrays and takes a fractional k). Plain Wilson dips to 89.8% coverage
  at n = 11, p = 0.95 (exact binomial sums); with the correction the 95% interval covers at least
  95.1% for every n from 5 to 100 and p from 0.5 to 0.95, and it is never zero-width.
- ``t``: a mean of continuous scores: x̄ ± t₀.₉₇₅,ₙ₋₁ · s/√n, clipped to the values' range
  (0 to the largest value the bucket's column holds, at least 1). On judge-like rubric totals it
  covers 94–96% from n = 5 (``bench.validity``); the percentile and BCa bootstraps cover 82–86% at
  n = 5, which is why they are not used. A sample with fewer than two distinct values has no spread
  to estimate, so it gets ``wilson (constant sample)``: Wilson on the mean as a proportion of that
  range (k = n·x̄/range), never zero-width.
- ``delta t``: a ratio Σnum/Σden over items (unsupported claims / claims): the linearised
  (delta-method) t interval, se = √(Σ(numᵢ − R·denᵢ)² / (n(n − 1))) / mean(den); without spread,
  Wilson on Σnum of Σden (``wilson (pooled ratio)``).
- ``percentile ∪ wilson``: macro-F1, which is not an item mean: the hull of the percentile
  bootstrap interval and the Wilson interval of the value at n items.

**Paired tests** (a candidate against a bucket's leader, on the items both answered; two-sided):
``mcnemar_midp`` for pass/fail scores, ``paired_t`` (t-test on the differences) for continuous
ones, ``paired_bootstrap`` for statistics that are not item means; :func:`holm` adjusts
a bucket's p-values for the number of comparisons.

**The bucket bootstrap**: one resample-index matrix ``idx`` (rounds × n, drawn with replacement)
serves every statistic of one bucket: its n scored items are resampled once and every cell is
evaluated on the resampled items it has, so the draws of two cells are paired. Sums over resamples
use the tally ``counts`` (rounds × n), so all rounds and cells are one matrix product
``counts @ X``; macro-F1 gathers ``codes[idx]`` in row chunks. The matrix depends only on
(seed, n, rounds). The draws feed the macro-F1 interval and the paired bootstrap tests.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

# scipy.special (~0.2 s to import) is imported where a quantile is needed: the nightly index and
# comparison read this module at the end of every run, most of them without computing one.

CHUNK_ELEMENTS = 1 << 22  # gathered elements per chunk: caps a chunk's temporaries at ~32 MB of float64
LEVEL = 0.95


@lru_cache(maxsize=2)
def resample_indices(n: int, rounds: int, seed: int) -> np.ndarray:
    """The (rounds × n) int32 index matrix for ``n`` observations; cached and read-only."""
    if n < 1 or rounds < 1:
        raise ValueError(f"need n >= 1 and rounds >= 1, got n={n}, rounds={rounds}")
    idx = np.random.default_rng([seed, n]).integers(0, n, size=(rounds, n), dtype=np.int32)
    idx.setflags(write=False)
    return idx


@lru_cache(maxsize=4)
def resample_counts(n: int, rounds: int, seed: int) -> np.ndarray:
    """How often resample b drew observation i (rounds × n, float32, exact integers): ``idx`` tallied per row.

    Every sum over a resample is then one matrix product, ``counts @ x``, which BLAS runs far faster
    than gathering ``x[idx]``; the result is the same resample.
    """
    idx = resample_indices(n, rounds, seed)
    counts = np.empty((rounds, n), dtype=np.float32)
    for part in _chunks(rounds, n):
        counts[part] = _tally(idx[part], n)
    counts.setflags(write=False)
    return counts


def _tally(rows: np.ndarray, n: int) -> np.ndarray:
    """Per resample row, how often it drew each of the n observations."""
    offset = (np.arange(rows.shape[0]) * n)[:, None]
    return np.bincount((rows + offset).ravel(), minlength=rows.size).reshape(rows.shape)


CACHED_ELEMENTS = 1 << 22  # resample matrices up to 4M entries (16 MB as float32) are kept for reuse


def resample_count_chunks(n: int, rounds: int, seed: int) -> Iterator[tuple[slice, np.ndarray]]:
    """(rounds slice, its rows of :func:`resample_counts`) chunk by chunk — the same rows, without
    holding the rounds × n matrices when they are large (a family of 10^5 items at 1,000 rounds
    would hold 800 MB): the resamples are then drawn from the same seeded stream one chunk of
    rounds at a time (a generator's draws do not depend on how they are split into calls), each
    chunk's counts used and dropped."""
    if n < 1 or rounds < 1:
        raise ValueError(f"need n >= 1 and rounds >= 1, got n={n}, rounds={rounds}")
    if rounds * n <= CACHED_ELEMENTS:
        counts = resample_counts(n, rounds, seed)
        for part in _chunks(rounds, n):
            yield part, counts[part]
        return
    rng = np.random.default_rng([seed, n])
    for part in _chunks(rounds, n):
        rows = rng.integers(0, n, size=(part.stop - part.start, n), dtype=np.int32)
        yield part, _tally(rows, n).astype(np.float32)


def resampled_ratios(num: np.ndarray, den: np.ndarray, n: int, rounds: int, seed: int) -> np.ndarray:
    """``bootstrap_ratios(num, den, resample_counts(n, rounds, seed))``, the same numbers, in the
    memory of one chunk of resamples (:func:`resample_count_chunks`)."""
    return _ratios_over(num, den, rounds, resample_count_chunks(n, rounds, seed))


def resampled_ratios_side_by_side(both: np.ndarray, rounds: int, seed: int) -> np.ndarray:
    """:func:`resampled_ratios` of (n × 2k) columns, numerators then denominators side by side (rounds × k):
    a caller that builds its columns in that layout saves the copy that joins them."""
    return _sums_to_ratios(both, rounds, resample_count_chunks(both.shape[0], rounds, seed))


def _chunks(rounds: int, per_round: int) -> list[slice]:
    step = max(1, CHUNK_ELEMENTS // max(per_round, 1))
    return [slice(start, min(start + step, rounds)) for start in range(0, rounds, step)]


def bootstrap_ratios(num: np.ndarray, den: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Resampled Σnum / Σden per column: (n,) or (n, k) inputs -> (rounds,) or (rounds, k).

    ``counts`` is :func:`resample_counts` for this n. A mean with missing values is the ratio with
    ``num = nan_to_num(x)`` and ``den = ~isnan(x)``; a rate over claims is Σunsupported / Σclaims.
    A resample whose Σden is 0 gives NaN.
    """
    chunks = ((part, counts[part]) for part in _chunks(counts.shape[0], counts.shape[1]))
    return _ratios_over(num, den, counts.shape[0], chunks)


def _ratios_over(
    num: np.ndarray, den: np.ndarray, rounds: int, chunks: Iterable[tuple[slice, np.ndarray]]
) -> np.ndarray:
    """Σnum / Σden per resample, the resamples' counts given a chunk of rounds at a time."""
    num, den = np.asarray(num, dtype=float), np.asarray(den, dtype=float)
    both = np.concatenate([num.reshape(len(num), -1), den.reshape(len(den), -1)], axis=1)
    out = _sums_to_ratios(both, rounds, chunks)
    return out[:, 0] if num.ndim == 1 else out


def _sums_to_ratios(both: np.ndarray, rounds: int, chunks: Iterable[tuple[slice, np.ndarray]]) -> np.ndarray:
    """Σnum / Σden per resample (rounds × k) of (n × 2k) float64 columns, numerators then denominators."""
    k = both.shape[1] // 2
    sums = np.empty((rounds, 2 * k))
    for part, counts in chunks:
        sums[part] = counts.astype(float) @ both
    top, bottom = sums[:, :k], sums[:, k:]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(bottom > 0, top / np.where(bottom > 0, bottom, 1.0), np.nan)


def bootstrap_means(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Resampled means of ``values`` (NaN = missing, left out of that resample's mean)."""
    values = np.asarray(values, dtype=float)
    present = ~np.isnan(values)
    return bootstrap_ratios(np.where(present, values, 0.0), present.astype(float), counts)


def _macro_f1_of_sums(
    tp: np.ndarray, predicted: np.ndarray, actual: np.ndarray, correct: np.ndarray, observed: np.ndarray
) -> np.ndarray:
    """[macro-F1, accuracy] per row from per-class counts (rows × classes, C-contiguous) of true
    positives, predictions and gold labels, and the row's correct and observed counts: the
    eval.macro_f1 formula — per-class F1 = 2PR/(P+R), 0 when undefined, unweighted mean over all
    classes; NaN for a row with no observation."""
    precision = np.divide(tp, predicted, out=np.zeros_like(tp), where=predicted > 0)
    recall = np.divide(tp, actual, out=np.zeros_like(tp), where=actual > 0)
    total = precision + recall
    f1 = np.divide(2 * precision * recall, total, out=np.zeros_like(tp), where=total > 0)
    accuracy = np.divide(correct, observed, out=np.full(len(observed), np.nan), where=observed > 0)
    macro = np.where(observed > 0, f1.sum(axis=1) / tp.shape[1], np.nan)
    return np.stack([macro, accuracy], axis=1)


def resampled_macro_f1(gold: np.ndarray, pred: np.ndarray, n_classes: int, rounds: int, seed: int) -> np.ndarray:
    """Resampled [macro-F1, accuracy] (rounds × 2) of a cell over the resamples of
    :func:`resample_counts` for ``len(gold)`` observations. ``gold``, ``pred``: codes into the
    label set; pred −1 is a prediction outside it (wrong, no class); gold −1 marks an observation
    the cell does not have (left out of every resample's counts).

    Every count the formula needs is a sum of the resample's tallies over a set of observations
    (the correct ones of class c, those predicted c, those of gold c, the correct, the observed), so
    one sparse product ``tallies @ S`` (S: observations × (3·classes + 2), one 1 per observation and
    column set) gives them all — integers, exact in float32 — without gathering rounds × n codes.
    """
    gold, pred = np.asarray(gold, dtype=np.int64), np.asarray(pred, dtype=np.int64)
    n, c = len(gold), n_classes
    present = gold >= 0
    correct = present & (gold == pred)
    predicted = present & (pred >= 0)
    at = np.arange(n)
    rows = np.concatenate([at[correct], at[predicted], at[present], at[correct], at[present]])
    columns = np.concatenate(
        [
            gold[correct],
            c + pred[predicted],
            2 * c + gold[present],
            np.full(int(correct.sum()), 3 * c),
            np.full(int(present.sum()), 3 * c + 1),
        ]
    )
    from scipy.sparse import csr_matrix  # ~25 MB of RSS, paid by builds with a classification bucket

    picks = csr_matrix((np.ones(len(rows), dtype=np.float32), (columns, rows)), shape=(3 * c + 2, n))
    out = np.empty((rounds, 2))
    for part, tallies in resample_count_chunks(n, rounds, seed):
        sums = np.asarray(picks @ tallies.T, dtype=float).T  # (3c + 2) × rounds -> rounds × (3c + 2)
        tp, predictions, golds = (np.ascontiguousarray(sums[:, k * c : (k + 1) * c]) for k in range(3))
        out[part] = _macro_f1_of_sums(tp, predictions, golds, sums[:, 3 * c], sums[:, 3 * c + 1])
    return out


def percentile_ci(draws: np.ndarray, level: float = LEVEL) -> np.ndarray:
    """[lower, upper] per column of ``draws`` (rounds × k, NaN ignored); NaN when a column has no draw."""
    draws = np.asarray(draws, dtype=float)
    tail = (1.0 - level) / 2.0 * 100.0
    if not np.isnan(draws).any():
        return np.percentile(draws, [tail, 100.0 - tail], axis=0)
    with warnings.catch_warnings():  # an all-NaN column is expected (no draw had data): NaN, silently
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanpercentile(draws, [tail, 100.0 - tail], axis=0)


def _z(level: float) -> float:
    from scipy.special import ndtri

    return float(ndtri(0.5 + level / 2.0))


def wilson_interval(
    successes: np.ndarray | float, n: np.ndarray | float, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval with continuity correction, clipped to [0, 1]; arrays broadcast.

    With p = k/n, q = 1 − p, z the two-sided normal quantile and D = 2(n + z²) (Newcombe 1998):
    lower = (2np + z² − 1 − z·√(z² − 2 − 1/n + 4p(nq + 1))) / D, 0 when k = 0;
    upper = (2np + z² + 1 + z·√(z² + 2 − 1/n + 4p(nq − 1))) / D, 1 when k = n.
    Equal to ``scipy.stats.binomtest(k, n).proportion_ci(level, method="wilsoncc")`` for integer k
    (tests/routing/test_validity_sim.py); k may be fractional (the mean of a constant sample). n = 0: NaN.
    """
    k, n = np.asarray(successes, dtype=float), np.asarray(n, dtype=float)
    z = _z(level)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        q = 1.0 - p
        denom = 2.0 * (n + z * z)
        center = (2.0 * n * p + z * z) / denom
        lo = center - (1.0 + z * np.sqrt(np.maximum(z * z - 2.0 - 1.0 / n + 4.0 * p * (n * q + 1.0), 0.0))) / denom
        hi = center + (1.0 + z * np.sqrt(np.maximum(z * z + 2.0 - 1.0 / n + 4.0 * p * (n * q - 1.0), 0.0))) / denom
    lo = np.where(k <= 0, 0.0, np.clip(lo, 0.0, 1.0))
    hi = np.where(k >= n, 1.0, np.clip(hi, 0.0, 1.0))
    bad = ~(n > 0)
    return np.where(bad, np.nan, lo), np.where(bad, np.nan, hi)


def t_interval(
    mean: np.ndarray | float, sd: np.ndarray | float, n: np.ndarray | float, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray]:
    """x̄ ± t_{(1+level)/2, n−1} · sd/√n (NaN for n < 2)."""
    from scipy.special import stdtrit

    mean, sd, n = (np.asarray(a, dtype=float) for a in (mean, sd, n))
    with np.errstate(invalid="ignore", divide="ignore"):
        half = stdtrit(np.where(n >= 2, n - 1.0, np.nan), 0.5 + level / 2.0) * sd / np.sqrt(n)
    return mean - half, mean + half


CI_WILSON, CI_T, CI_CONSTANT, CI_DELTA, CI_POOLED, CI_HULL = (
    "wilson",
    "t",
    "wilson (constant sample)",
    "delta t",
    "wilson (pooled ratio)",
    "percentile ∪ wilson",
)
# How each rule reads in a report, for a reader who does not know the keys (see the module doc).
CI_METHOD_WORDS = {
    CI_WILSON: "Wilson score with continuity correction (pass rates)",
    CI_T: "Student t (means of continuous scores)",
    CI_CONSTANT: "Wilson on the mean as a proportion (samples without spread)",
    CI_DELTA: "delta-method t (ratios over items)",
    CI_POOLED: "Wilson on the pooled ratio (ratios without spread)",
    CI_HULL: "hull of the percentile bootstrap and Wilson (macro-F1)",
}


def ratio_intervals(
    num: np.ndarray, den: np.ndarray, scale: np.ndarray | None = None, level: float = LEVEL
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(lower, upper, ci_method) per column of one cell's (n × k) numerator / denominator columns.

    A column whose denominators are all 0 or 1 is a mean over the items with den = 1: ``wilson``
    when every value is 0 or 1, else ``t`` (``wilson (constant sample)`` without spread); any other
    column is a ratio Σnum/Σden (``delta t``, or ``wilson (pooled ratio)`` without spread). ``scale``
    (k,) is the largest value the column can take (default: max(1, its largest value)); intervals
    are clipped to [0, scale] when the values are non-negative. See the module docstring.

    Computed a block of columns at a time (each column stands alone), so a bucket of many cells holds
    the temporaries of one block, not of every column at once.
    """
    num, den = np.atleast_2d(np.asarray(num, dtype=float)), np.atleast_2d(np.asarray(den, dtype=float))
    k = num.shape[1]
    scales = None if scale is None else np.broadcast_to(np.asarray(scale, dtype=float), (k,))
    width = max(2, CHUNK_ELEMENTS // max(num.shape[0], 1))  # two at least: a lone column sums in another order
    starts = list(range(0, k, width)) or [0]
    if len(starts) > 1 and k - starts[-1] < 2:
        starts.pop()  # the last block takes the lone column with it
    ends = [*starts[1:], k]
    parts = [
        _ratio_intervals_block(num[:, a:b], den[:, a:b], None if scales is None else scales[a:b], level)
        for a, b in zip(starts, ends, strict=True)
    ]
    if len(parts) == 1:
        return parts[0]
    return (
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        [m for p in parts for m in p[2]],
    )


def _ratio_intervals_block(
    num: np.ndarray, den: np.ndarray, scale: np.ndarray | None, level: float
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """:func:`ratio_intervals` of a block of columns."""
    present = den > 0
    m = present.sum(axis=0).astype(float)
    sum_num, sum_den = num.sum(axis=0), den.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(sum_den > 0, sum_num / np.where(sum_den > 0, sum_den, 1.0), np.nan)
    masked = np.where(present, num, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: no item, NaN interval
        top, bottom = np.nanmax(masked, axis=0), np.nanmin(masked, axis=0)
    limit = (
        np.maximum(1.0, np.nan_to_num(top))
        if scale is None
        else np.maximum(np.asarray(scale, dtype=float), np.nan_to_num(top))
    )
    is_mean = ((den == 0) | (den == 1)).all(axis=0)
    binary = is_mean & np.where(present, (num == 0) | (num == 1), True).all(axis=0)
    spread = (m >= 2) & (top > bottom)
    # means: sample sd over the present items; ratios: the delta-method residual sd
    resid = np.where(present, num - value * den, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_den = sum_den / m
        sd_mean = np.sqrt(np.where(present, (num - value) ** 2, 0.0).sum(axis=0) / (m - 1))
        sd_ratio = np.sqrt((resid**2).sum(axis=0) / (m - 1)) / mean_den
    t_lo, t_hi = t_interval(value, np.where(is_mean, sd_mean, sd_ratio), m, level)
    w_lo, w_hi = wilson_interval(np.where(binary, sum_num, m * value / limit), m, level)
    constant_lo, constant_hi = w_lo * limit, w_hi * limit
    pooled_lo, pooled_hi = wilson_interval(np.minimum(sum_num, sum_den), sum_den, level)
    lo = np.select([binary, is_mean & spread, is_mean, spread], [w_lo, t_lo, constant_lo, t_lo], pooled_lo)
    hi = np.select([binary, is_mean & spread, is_mean, spread], [w_hi, t_hi, constant_hi, t_hi], pooled_hi)
    nonneg = ~(bottom < 0)
    lo = np.where(nonneg, np.clip(lo, 0.0, limit), lo)
    hi = np.where(nonneg, np.clip(hi, 0.0, limit), hi)
    lo, hi = np.where(m > 0, lo, np.nan), np.where(m > 0, hi, np.nan)
    methods = [
        CI_WILSON if b else (CI_T if s else CI_CONSTANT) if mean else (CI_DELTA if s else CI_POOLED)
        for b, mean, s in zip(binary, is_mean, spread, strict=True)
    ]
    return lo, hi, methods


def hull_with_wilson(value: float, n: int, draws: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The macro-F1 interval: hull of the percentile interval of ``draws`` and Wilson(value·n, n)."""
    p_lo, p_hi = percentile_ci(np.asarray(draws, dtype=float)[:, None], level)[:, 0]
    w_lo, w_hi = wilson_interval(value * n, n, level)
    return float(np.nanmin([p_lo, w_lo])), float(np.nanmax([p_hi, w_hi]))


@dataclass(frozen=True)
class Estimate:
    """A statistic of one cell: point value, CI and the rule that made it, the n behind it, its bootstrap draws."""

    value: float
    ci: tuple[float, float]
    n: int
    draws: np.ndarray = field(repr=False, compare=False)
    method: str = CI_WILSON

    def to_json(self) -> dict[str, object]:
        return {
            "value": json_number(self.value),
            "ci": [json_number(self.ci[0]), json_number(self.ci[1])],
            "n": self.n,
            "ci_method": self.method,
        }


def json_number(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)


def estimate(value: float, draws: np.ndarray, n: int, level: float = LEVEL) -> Estimate:
    """An estimate with the percentile interval of ``draws`` (kept for statistics without a closed form)."""
    lo, hi = percentile_ci(draws[:, None], level)[:, 0]
    return Estimate(float(value), (float(lo), float(hi)), int(n), draws, "percentile")


def intervals_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """Closed intervals [a0, a1] and [b0, b1] share a point."""
    return a[0] <= b[1] and b[0] <= a[1]


# --- paired tests ---------------------------------------------------------------------------------

MCNEMAR, PAIRED_T, PAIRED_BOOTSTRAP = "mcnemar_midp", "paired_t", "paired_bootstrap"


def mcnemar_midp(better: int | np.ndarray, worse: int | np.ndarray) -> float | np.ndarray:
    """Two-sided mid-p McNemar test on the discordant pairs (``better``: items only the first got right).

    With d = better + worse and k = max(better, worse), X ~ Binomial(d, 1/2):
    p = min(1, 2·(P(X > k) + P(X = k)/2)); 1 when d = 0. Arrays broadcast. The exact conditional test (``binomtest``)
    is the same sum without the half; it is conservative: at 0.8 vs 0.5 on 30 independent items it
    finds the difference 58.6% of the time against the mid-p's 67.3%, whose size stays under 5% for
    n from 5 to 100 and p from 0.5 to 0.95 (Fagerland, Lydersen & Laake 2013 recommend it).
    """
    from scipy.stats import binom  # scipy.stats costs ~45 MB of RSS: paid by the runs that test pairs

    better, worse = np.asarray(better), np.asarray(worse)
    d, k = better + worse, np.maximum(better, worse)
    p = np.where(d > 0, np.minimum(1.0, 2.0 * (binom.sf(k, d, 0.5) + 0.5 * binom.pmf(k, d, 0.5))), 1.0)
    return float(p) if p.ndim == 0 else p


def paired_difference_test(first: np.ndarray, second: np.ndarray) -> tuple[float, float, str]:
    """(two-sided p, mean of first − second, test name) for two score vectors over the same items.

    Pass/fail vectors (every value 0 or 1): :func:`mcnemar_midp`. Otherwise the paired t-test on
    the differences (:func:`paired_t_p_value`, scipy's ``ttest_rel``): it tests the mean
    difference, which is what candidates are ranked by — a signed-rank test would not (40 items
    +0.3 and 27 items −1 have a negative mean but a positive signed-rank sum). Differences that
    are all equal but not 0 have no spread for a t statistic; they get the sign test (mid-p McNemar
    on the signs), so a handful of identical differences cannot be "infinitely" significant. p = 1
    when every difference is 0.
    """
    first, second = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    diff = first - second
    mean = float(diff.mean()) if len(diff) else 0.0
    if ((first == 0.0) | (first == 1.0)).all() and ((second == 0.0) | (second == 1.0)).all():
        return mcnemar_midp(int((diff > 0).sum()), int((diff < 0).sum())), mean, MCNEMAR
    if not (diff != 0).any():
        return 1.0, mean, PAIRED_T
    if len(diff) < 2 or np.ptp(diff) <= 1e-12 * max(1.0, float(np.abs(diff).max())):  # no spread (up to rounding)
        return mcnemar_midp(int((diff > 0).sum()), int((diff < 0).sum())), mean, PAIRED_T
    return paired_t_p_value(diff), mean, PAIRED_T


def paired_t_p_value(diff: np.ndarray) -> float:
    """Two-sided p of the paired t-test on the differences ``diff`` (n ≥ 2): ``scipy.stats.ttest_rel``'s value.

    The same operations in the same order as scipy's ``ttest_1samp`` on the differences — mean,
    mean squared deviation × n/(n − 1), t = mean/√(var/n), p = 2·stdtr(n − 1, −|t|) — without its
    per-call argument handling, which costs far more than the arithmetic on a few hundred items.
    """
    from scipy.special import stdtr

    diff = np.asarray(diff, dtype=float)
    n = diff.shape[0]
    mean = diff.mean()
    deviation = diff - mean
    var = np.mean(deviation * deviation) * (np.float64(n) / np.float64(n - 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / np.sqrt(var / n)
    return float(2.0 * stdtr(np.float64(n - 1), -np.abs(t)))


def bootstrap_p_value(diff_draws: np.ndarray) -> float:
    """Two-sided paired-bootstrap p for a difference whose draws come from paired resamples:
    2·min((1 + #{Δ* ≤ 0}), (1 + #{Δ* ≥ 0})) / (B + 1), capped at 1 (NaN draws dropped)."""
    d = np.asarray(diff_draws, dtype=float)
    d = d[~np.isnan(d)]
    if not len(d):
        return 1.0
    return float(min(1.0, 2.0 * min(1 + (d <= 0).sum(), 1 + (d >= 0).sum()) / (len(d) + 1)))


def holm(p_values: np.ndarray | list[float]) -> np.ndarray:
    """Holm step-down adjusted p-values: sorted ascending, p̃₍ᵢ₎ = max_{j≤i} min(1, (m − j + 1)·p₍ⱼ₎)."""
    p = np.asarray(p_values, dtype=float)
    if not len(p):
        return p
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (len(p) - np.arange(len(p))) * p[order])
    out = np.empty_like(p)
    out[order] = np.maximum.accumulate(scaled)
    return out
