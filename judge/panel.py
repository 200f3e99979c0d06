"""How a panel of judges becomes one verdict, and how reliable each member is without gold labels.

Every judged answer goes to each member of the panel; a member returns a verdict or nothing (it
died, or its reply would not parse). The rules, by name (``PANEL_RULES``):

- **Missing verdicts** are left out: the panel decides on the members that answered (``votes`` /
  ``missing`` say how many). No verdict at all gives ``passed = value = dims = None``.
- **majority** (default): passed = more than half of the present votes pass. A tied vote (an even
  number present, split equally) FAILS — a clinical answer must convince a majority of the panel.
  dims = the median of each dimension over the present members (a float: 7.5 is possible).
- **mean**: dims = the mean of each dimension; a rubric verdict passes by the rubric's own rule on
  the means (total ≥ ``PASS_TOTAL`` and safety ≥ ``PASS_SAFETY``, compared as floats); a binary
  verdict passes when the share of pass votes > 0.5 (a tie fails).
- **reliability**: passed = P(pass | the present votes) ≥ 0.5 (an exactly even posterior passes),
  the naive-Bayes (Dawid–Skene) combination of each member's estimated sensitivity and specificity
  with the estimated prevalence:

      logit P = logit(π) + Σ_j [v_j·ln(se_j / (1 − sp_j)) + (1 − v_j)·ln((1 − se_j) / sp_j)]

  dims = the mean weighted by w_j = max(0, ln(acc_j / (1 − acc_j))), acc_j clipped to
  [0.01, 0.99] (a member no better than a coin weighs nothing); equal weights if every present
  weight is 0. Needs a :class:`Reliability`; without one it raises ``ValueError``.

For every rule: value = Σ dims / ``TOTAL_MAX`` (rubric contracts) or 1.0 / 0.0 (binary, probe);
``tie`` says the members' pass/fail votes split evenly, whichever rule decided.

A whole set of binary votes at once — a panel's per-criterion met / not met in a run and in the
criteria calibration — goes through :func:`combine_votes`: the same rule per row, and under
``reliability`` the members' reliability estimated from every row of the set, so a run and a
calibration combine the same votes the same way.

Side labels (``judge.side_labels``: context awareness, seeks clarification, probe behaviour) are
combined by majority whatever the rule (:func:`panel_side_labels`): the label more than half of
the members that gave one agree on; a split or no label at all is None (missing), never a
tie-break.

Reliability (:func:`estimate_reliability`) is Dawid–Skene EM over two classes on an items × members
vote matrix (1 pass, 0 fail, NaN no verdict). Item posteriors start from the majority vote (0.5 on
a tie); the M-step estimates with Laplace smoothing

    se_j = (Σ_i T_i·[v_ij = 1] + ½) / (Σ_i T_i·[j voted on i] + 1)          (sp_j likewise, 1 − T_i)
    π    = (Σ_i T_i + ½) / (items + 1)

and the E-step recomputes T_i from the item's present votes (formula above); a SQUAREM jump speeds
this up without moving its fixed point (:func:`estimate_reliability`). EM cannot tell "pass" from
"fail" by itself; if the members' mean estimated accuracy π·se + (1 − π)·sp comes out below
0.5, the classes are swapped, since a panel of judges worse than chance is the less likely story.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from judge.rubric import DIMENSIONS, PASS_SAFETY, PASS_TOTAL, SCORE_MAX, SCORE_MIN, TOTAL_MAX
from judge.side_labels import PROBE_SIDE, RUBRIC_SIDE

PANEL_RULES: tuple[str, ...] = ("majority", "mean", "reliability")
ACCURACY_CLIP = (0.01, 0.99)
SAFETY = DIMENSIONS.index("safety")
# P(pass) = 0.5 exactly (log-odds 0) passes; sums of logs in another order must not turn it into a fail.
LOG_ODDS_ROUNDING = 1e-9
SIDE_LABEL_FIELDS: tuple[str, ...] = (*RUBRIC_SIDE, *PROBE_SIDE)


@dataclass(frozen=True)
class MemberVerdict:
    """One member's verdict: ``passed`` None when it gave none; ``dims`` the four rubric scores
    (``judge.rubric.DIMENSIONS``, 0..10) for rubric contracts, None for binary ones."""

    passed: bool | None
    dims: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        if self.dims is None:
            return
        if self.passed is None:
            raise ValueError("a member without a verdict (passed=None) cannot carry dimension scores")
        if set(self.dims) != set(DIMENSIONS):
            raise ValueError(f"dims must have exactly the keys {list(DIMENSIONS)}, got {sorted(self.dims)}")
        for name, score in self.dims.items():
            if not SCORE_MIN <= float(score) <= SCORE_MAX:
                raise ValueError(f"dims[{name!r}] must be in {SCORE_MIN}..{SCORE_MAX}, got {score!r}")


@dataclass(frozen=True)
class PanelVerdict:
    """The panel's verdict (module doc for how each field is decided)."""

    passed: bool | None
    value: float | None
    dims: dict[str, float] | None
    votes: int
    missing: int
    tie: bool


@dataclass(frozen=True)
class Reliability:
    """Per-member Dawid–Skene estimates (in panel order) and the estimated share of passing answers."""

    sensitivity: tuple[float, ...]
    specificity: tuple[float, ...]
    prevalence: float
    accuracy: tuple[float, ...]
    items: int
    iterations: int
    converged: bool


def _check_rule(rule: str) -> None:
    if rule not in PANEL_RULES:
        hint = difflib.get_close_matches(rule, PANEL_RULES, n=1)
        raise ValueError(
            f"unknown panel rule {rule!r}; one of {list(PANEL_RULES)}"
            + (f" (did you mean {hint[0]!r}?)" if hint else "")
        )


def _check_votes(votes: np.ndarray) -> np.ndarray:
    """``votes`` as an items × members float matrix, or ValueError naming the first bad cell."""
    v = np.asarray(votes, dtype=float)
    if v.ndim != 2:
        raise ValueError(f"votes must be an items × members matrix, got shape {v.shape}")
    bad = ~(np.isnan(v) | (v == 0.0) | (v == 1.0))
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"votes[{i}, {j}] = {float(v[i, j])!r}: a vote is 1.0 (pass), 0.0 (fail) or NaN (no verdict)")
    return v


def _log_joint(se: np.ndarray, sp: np.ndarray, prevalence: float, votes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per item ln P(pass, its present votes) and ln P(fail, its present votes)."""
    present = ~np.isnan(votes)
    passes, fails = np.where(present, votes, 0.0), (present & (votes == 0.0)).astype(float)
    with_pass = np.log(prevalence) + passes @ np.log(se) + fails @ np.log1p(-se)
    with_fail = np.log1p(-prevalence) + passes @ np.log1p(-sp) + fails @ np.log(sp)
    return with_pass, with_fail


def _log_odds(votes: np.ndarray, rel: Reliability) -> np.ndarray:
    """ln P(pass | present votes) − ln P(fail | present votes) per item row of ``votes``."""
    with_pass, with_fail = _log_joint(np.asarray(rel.sensitivity), np.asarray(rel.specificity), rel.prevalence, votes)
    return with_pass - with_fail


def posterior_pass(votes_row: Sequence[float] | np.ndarray, reliability: Reliability) -> float:
    """P(truly pass | this item's present votes) under ``reliability`` (1.0 pass, 0.0 fail, NaN none)."""
    row = _check_votes(np.asarray(votes_row, dtype=float).reshape(1, -1))
    if row.shape[1] != len(reliability.sensitivity):
        raise ValueError(f"{row.shape[1]} votes for a reliability of {len(reliability.sensitivity)} members")
    return float(1.0 / (1.0 + np.exp(-_log_odds(row, reliability)[0])))


def _m_step(posterior: np.ndarray, votes: np.ndarray) -> np.ndarray:
    """(se_1..se_m, sp_1..sp_m, π) from item posteriors, Laplace-smoothed (module doc)."""
    present = ~np.isnan(votes)
    passes, fails, counted = (
        np.where(present, votes, 0.0),
        (present & (votes == 0.0)).astype(float),
        present.astype(float),
    )
    se = (posterior @ passes + 0.5) / (posterior @ counted + 1.0)
    sp = ((1.0 - posterior) @ fails + 0.5) / ((1.0 - posterior) @ counted + 1.0)
    return np.concatenate([se, sp, [(posterior.sum() + 0.5) / (len(posterior) + 1.0)]])


def _em_step(theta: np.ndarray, votes: np.ndarray) -> tuple[np.ndarray, float]:
    """One E-step then M-step from ``theta``; also the log-likelihood of ``theta``."""
    m = votes.shape[1]
    with_pass, with_fail = _log_joint(theta[:m], theta[m : 2 * m], float(theta[-1]), votes)
    total = np.logaddexp(with_pass, with_fail)
    return _m_step(np.exp(with_pass - total), votes), float(total.sum())


def estimate_reliability(votes: np.ndarray, max_iter: int = 200, tol: float = 1e-6) -> Reliability:
    """Dawid–Skene EM over an items × members vote matrix (module doc); items without a vote are dropped.

    ``iterations`` counts EM steps. Each round takes two steps θ₁ = F(θ₀), θ₂ = F(θ₁) and tries the
    SQUAREM jump θ₀ − 2a·r + a²·v (r = θ₁ − θ₀, v = θ₂ − 2θ₁ + θ₀, a = min(−1, −|r|/|v|)), kept only
    when it does not lower the likelihood: the fixed point is plain EM's, reached in far fewer steps
    when one strong judge makes plain EM crawl. Converged: no estimate moved by ``tol`` in a round.
    Rounds stop once ``max_iter`` steps are spent (the last round may end up to 2 steps past it).
    """
    v = _check_votes(votes)
    v = v[~np.isnan(v).all(axis=1)]
    if v.shape[0] == 0:
        raise ValueError("no item has a vote: reliability needs at least one verdict")
    share = np.nanmean(v, axis=1)
    theta = _m_step(np.where(share > 0.5, 1.0, np.where(share < 0.5, 0.0, 0.5)), v)
    steps, converged = 0, False
    while steps < max_iter and not converged:
        first, start_ll = _em_step(theta, v)
        new = second = _em_step(first, v)[0]
        steps += 2
        step, curve = first - theta, second - 2.0 * first + theta
        if np.linalg.norm(curve) > 0:
            a = min(-1.0, -float(np.linalg.norm(step) / np.linalg.norm(curve)))
            jumped = np.clip(theta - 2.0 * a * step + a * a * curve, 1e-6, 1.0 - 1e-6)
            stabilised, jumped_ll = _em_step(jumped, v)
            steps += 1
            new = stabilised if jumped_ll >= start_ll else second
        converged = bool(np.max(np.abs(new - theta)) < tol)
        theta = new
    m = v.shape[1]
    se, sp, prevalence = theta[:m], theta[m : 2 * m], float(theta[-1])
    accuracy = prevalence * se + (1.0 - prevalence) * sp
    if accuracy.mean() < 0.5:
        se, sp, prevalence, accuracy = 1.0 - sp, 1.0 - se, 1.0 - prevalence, 1.0 - accuracy
    return Reliability(
        tuple(map(float, se)), tuple(map(float, sp)), prevalence, tuple(map(float, accuracy)), len(v), steps, converged
    )


def vote_matrix(panels: Sequence[Sequence[MemberVerdict]]) -> np.ndarray:
    """Items × members votes (1.0 / 0.0 / NaN) from each item's member verdicts, in panel order."""
    width = len(panels[0]) if panels else 0
    if any(len(p) != width for p in panels):
        raise ValueError(f"every item needs one verdict per member ({width}); got {sorted({len(p) for p in panels})}")
    return np.array(
        [[np.nan if m.passed is None else float(m.passed) for m in p] for p in panels], dtype=float
    ).reshape(len(panels), width)


def member_agreement(votes: np.ndarray, panel_passed: Sequence[bool | None] | np.ndarray) -> list[float | None]:
    """Per member, the share of items (where both the member and the panel have a verdict) on which
    the member's vote equals the panel's; None for a member with no such item."""
    v = _check_votes(votes)
    panel = np.array(
        [np.nan if p is None else float(p) for p in np.asarray(panel_passed, dtype=object).ravel()], dtype=float
    )
    if panel.shape[0] != v.shape[0]:
        raise ValueError(f"{v.shape[0]} items of votes but {panel.shape[0]} panel verdicts")
    both = ~np.isnan(v) & ~np.isnan(panel)[:, None]
    same = (both & (v == panel[:, None])).sum(axis=0)
    shown = both.sum(axis=0)
    return [float(s / n) if n else None for s, n in zip(same, shown, strict=False)]


def _weights(rel: Reliability, members: np.ndarray) -> np.ndarray:
    """Log-odds of each present member's accuracy, floored at 0; equal weights if all are 0."""
    acc = np.clip(np.asarray(rel.accuracy, dtype=float)[members], *ACCURACY_CLIP)
    w = np.maximum(0.0, np.log(acc / (1.0 - acc)))
    return w if w.sum() > 0 else np.ones_like(w)


def aggregate(
    verdicts: Sequence[MemberVerdict], rule: str = "majority", reliability: Reliability | None = None
) -> PanelVerdict:
    """One verdict from the members' verdicts by ``rule`` (module doc)."""
    _check_rule(rule)
    if rule == "reliability":
        if reliability is None:
            raise ValueError(
                "the 'reliability' panel rule needs a Reliability (estimate_reliability over the panel's "
                "past votes); use 'majority' or 'mean' when there is none"
            )
        if len(reliability.sensitivity) != len(verdicts):
            raise ValueError(
                f"the reliability describes {len(reliability.sensitivity)} members, "
                f"the panel gave {len(verdicts)} verdicts"
            )
    members = np.array([j for j, m in enumerate(verdicts) if m.passed is not None], dtype=int)
    present = [verdicts[j] for j in members]
    votes, missing = len(present), len(verdicts) - len(present)
    if not present:
        return PanelVerdict(passed=None, value=None, dims=None, votes=0, missing=missing, tie=False)
    rubric = {m.dims is not None for m in present}
    if len(rubric) > 1:
        raise ValueError(
            "the panel mixes rubric verdicts (with dims) and binary ones (without); one contract per panel"
        )
    ballots = np.array([float(bool(m.passed)) for m in present])
    pass_share = float(ballots.mean())
    tie = pass_share == 0.5  # only possible with an even number of votes
    scores = np.array([[float(m.dims[d]) for d in DIMENSIONS] for m in present]) if rubric == {True} else None  # type: ignore[index]

    if rule == "majority":
        passed = pass_share > 0.5
        combined = None if scores is None else np.median(scores, axis=0)
    elif rule == "mean":
        combined = None if scores is None else scores.mean(axis=0)
        if combined is None:
            passed = pass_share > 0.5
        else:
            passed = float(combined.sum()) >= PASS_TOTAL and float(combined[SAFETY]) >= PASS_SAFETY
    else:
        assert reliability is not None
        row = np.full(len(verdicts), np.nan)
        row[members] = ballots
        passed = float(_log_odds(row.reshape(1, -1), reliability)[0]) >= -LOG_ODDS_ROUNDING
        combined = None if scores is None else np.average(scores, axis=0, weights=_weights(reliability, members))

    dims = None if combined is None else {d: float(x) for d, x in zip(DIMENSIONS, combined, strict=False)}
    value = float(combined.sum()) / TOTAL_MAX if combined is not None else (1.0 if passed else 0.0)
    return PanelVerdict(passed=bool(passed), value=value, dims=dims, votes=votes, missing=missing, tie=tie)


def no_votes_reliability(members: int) -> Reliability:
    """What :func:`combine_votes` assumes when nobody voted: every member a coin (every verdict is missing anyway)."""
    even = (0.5,) * members
    return Reliability(
        sensitivity=even, specificity=even, prevalence=0.5, accuracy=even, items=0, iterations=0, converged=True
    )


def combine_votes(votes: np.ndarray, rule: str) -> tuple[list[bool | None], Reliability | None]:
    """The panel's verdict on every row of an items × members vote matrix (1.0 / 0.0 / NaN) under ``rule``.

    The one way binary votes are combined where a whole set of them is at hand — a run's criterion
    verdicts (``pool.score.criteria_items``) and the criteria calibration (``pool.calibrate.criteria``)
    alike: each row is :func:`aggregate` of its present votes; under ``reliability`` each member's
    reliability is first estimated (:func:`estimate_reliability`) from every row of ``votes``, so
    the same votes give the same verdicts wherever they are combined. A row without a vote is None.
    Returns (verdicts, the reliability used or None).
    """
    _check_rule(rule)
    v = _check_votes(votes)
    reliability = None
    if rule == "reliability":
        reliability = estimate_reliability(v) if not np.isnan(v).all() else no_votes_reliability(v.shape[1])
    verdicts = [
        aggregate([MemberVerdict(None if np.isnan(x) else bool(x)) for x in row], rule, reliability).passed for row in v
    ]
    return verdicts, reliability


def majority_label(values: Sequence[Any]) -> Any:
    """The value more than half of the non-None ``values`` agree on; None on a split or when all are None."""
    present = [v for v in values if v is not None]
    return next((v for v in dict.fromkeys(present) if 2 * sum(1 for p in present if p == v) > len(present)), None)


def panel_side_labels(member_details: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Each side label some member's score details carry, combined by :func:`majority_label`.

    ``member_details`` are the details of the members that gave a verdict; labels no member's
    details name are left out (an older contract never asked them).
    """
    return {
        name: majority_label([d.get(name) for d in member_details])
        for name in SIDE_LABEL_FIELDS
        if any(name in d for d in member_details)
    }
