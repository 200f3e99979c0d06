"""Who wins: the leader, the models not significantly worse than it, and the tie rule.

One procedure decides every choice in the manifest (a bucket, a family, ``default``, the
orchestrator), given *contestants* — each with its point score, 95% interval and per-item scores:

1. **Leader** = the contestant with the highest lower confidence bound (then the higher score,
   then the rest of the tie rule: :func:`tie_key`). A 5-item model at 1.0 (Wilson lower bound
   0.57) does not lead a 100-item model at 0.85 (0.76): ranking by the point estimate would make
   the least-measured model the reference of every test.
2. **Paired tests** of every other contestant against the leader on the items both answered
   (:func:`routing.stats.intervals.paired_difference_test`: McNemar mid-p for pass/fail, paired
   t-test otherwise; or a paired bootstrap over the contestants' lockstep draws when the
   statistic is not an item mean), two-sided, Holm-adjusted over the comparisons made. A
   contestant sharing fewer than ``min_paired`` items with the leader is not tested and stays tied
   (it cannot be shown worse). If a contestant is significantly *better* than the leader, it
   becomes the leader and the tests are redone.
3. ``tied_top`` = the leader and every contestant not significantly worse (Holm p ≥ alpha): the
   leader first, then the others in **tie-rule** order — the leader criterion (higher lower
   confidence bound, then higher score), then lower median latency, then more items, then a stable
   hash (sha256 of the decision's id and the contestant's identity key); never the name. Its first
   entry is the pick, so the pick is always the leader: the top of the tie-rule order, unless a
   contestant shown significantly better displaced it. ``decisive`` = ``tied_top`` is alone, i.e.
   the leader is significantly better than every other contestant.

   Quality comes before speed: a tie is a failure to show a difference, not evidence of
   equality, and the measured quality is still the best guess of which contestant is better. A
   latency-first order sends tied buckets to faster, weaker models, and the routing then loses to
   the best single model on held-out items (what :mod:`routing.decide.validation` measures). Latency,
   items and the hash only order contestants whose bound and score are equal.

Pure functions: contestants in, a :class:`Decision` out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from routing.stats.intervals import PAIRED_BOOTSTRAP, bootstrap_p_value, holm, paired_difference_test

LEADER_RULE = "highest lower confidence bound, then higher score"
TIE_RULE = f"{LEADER_RULE}, then lower median latency, then more items, then sha256(decision id, identity key)"
TIE_RULE_KEYS = "lower_bound, score, latency, items, hash"  # the manifest's ``tie_rule``: TIE_RULE in order
LEADER, TIED, WORSE = "leader", "tied", "worse"


@dataclass(frozen=True)
class Contestant:
    label: str  # the model as the manifest names it
    key: str  # stable identity key (model key, plus judge key when several judges scored it)
    score: float
    ci: tuple[float, float]
    n: int
    items: np.ndarray  # sorted item codes
    values: np.ndarray  # per-item scores aligned with items (unused with draws-based tests)
    latency: float = float("nan")  # median latency (s); NaN = unknown, sorts last
    draws: np.ndarray | None = field(default=None, repr=False)  # paired bootstrap draws of the score


@dataclass(frozen=True)
class Verdict:
    contestant: Contestant
    verdict: str  # leader | tied | worse
    n_paired: int | None = None  # items both answered (None for the leader)
    p_value: float | None = None  # two-sided, vs the leader; None when not tested
    p_holm: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class Decision:
    verdicts: tuple[Verdict, ...]  # the leader, the rest of tied_top in tie-rule order, then the worse by score
    test: str | None  # the paired test used (None: fewer than two contestants)
    alpha: float

    @property
    def tied_top(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.verdict != WORSE]

    @property
    def leader(self) -> Contestant | None:
        return next((v.contestant for v in self.verdicts if v.verdict == LEADER), None)

    @property
    def pick(self) -> Contestant | None:
        return self.verdicts[0].contestant if self.verdicts else None

    @property
    def decisive(self) -> bool:
        return len(self.tied_top) == 1

    @property
    def chosen_by(self) -> str:
        """``paired_test`` (the leader beat every other), ``tie_rule`` or ``only_candidate``; ``none`` when empty."""
        if not self.verdicts:
            return "none"
        if len(self.verdicts) == 1:
            return "only_candidate"
        return "paired_test" if self.decisive else "tie_rule"


def tie_key(contestant: Contestant, salt: str) -> tuple[float, float, float, int, str]:
    """The tie rule as a sort key (smallest first): (−lower bound, −score, latency, −items, hash).

    Also the leader criterion: its first two fields are the leader rule, the rest break its ties.
    A missing bound or score sorts last, as does an unknown (NaN) latency.
    """
    latency = contestant.latency if np.isfinite(contestant.latency) else float("inf")
    digest = hashlib.sha256(f"{salt}\0{contestant.key}".encode()).hexdigest()
    return (-_finite(contestant.ci[0]), -_finite(contestant.score), latency, -contestant.n, digest)


def _paired(a: Contestant, b: Contestant, bootstrap: bool) -> tuple[int, float, float, str]:
    """(n_paired, p, mean difference a − b, test) on the items both answered."""
    ia, ib = _common_items(a.items, b.items)
    n_common = len(a.items) if ia is None else len(ia)
    if bootstrap:
        diff = np.asarray(a.draws) - np.asarray(b.draws)
        return n_common, bootstrap_p_value(diff), float(a.score - b.score), PAIRED_BOOTSTRAP
    if not n_common:
        return 0, 1.0, 0.0, ""
    if ia is None:  # the usual case: the same items
        p, mean, test = paired_difference_test(a.values, b.values)
    else:
        p, mean, test = paired_difference_test(a.values[ia], b.values[ib])
    return n_common, p, mean, test


def _common_items(items_a: np.ndarray, items_b: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:
    """Positions in each of the items both hold, in item order (``np.intersect1d``'s indices);
    (None, None) when the two hold the same items. Sorted, distinct codes (what contestants carry)
    are matched by binary search; anything else goes through ``np.intersect1d``."""
    if not ((items_a[1:] > items_a[:-1]).all() and (items_b[1:] > items_b[:-1]).all()):
        _, ia, ib = np.intersect1d(items_a, items_b, assume_unique=True, return_indices=True)
        return ia, ib
    if len(items_a) == len(items_b) and np.array_equal(items_a, items_b):
        return None, None
    at = np.searchsorted(items_b, items_a)
    found = at < len(items_b)
    found[found] = items_b[at[found]] == items_a[found]
    ia = np.flatnonzero(found)
    return ia, at[ia]


def decide(
    contestants: Sequence[Contestant], alpha: float, min_paired: int, salt: str, bootstrap: bool = False
) -> Decision:
    """The leader, the paired tests against it and the tie-rule order (see the module docstring).

    ``bootstrap``: test with the contestants' paired ``draws`` instead of their per-item values.
    ``salt``: the decision's id (e.g. the bucket id), mixed into the last tie-break.
    """
    if not contestants:
        return Decision((), None, alpha)
    by_bound = sorted(contestants, key=lambda c: tie_key(c, salt))
    leader, seen = by_bound[0], set()
    while True:
        seen.add(leader.key)
        others = [c for c in contestants if c is not leader]
        tests = [_paired(leader, c, bootstrap) for c in others]
        tested = [i for i, (n, *_rest) in enumerate(tests) if n >= min_paired]
        adjusted = dict(zip(tested, holm([tests[i][1] for i in tested]), strict=True))
        better = [others[i] for i in tested if adjusted[i] < alpha and tests[i][2] < 0 and others[i].key not in seen]
        if not better:
            break
        leader = min(better, key=lambda c: tie_key(c, salt))
    verdicts = [Verdict(leader, LEADER)]
    test = " + ".join(sorted({t for _, _, _, t in tests if t})) or None
    for i, (contestant, (n, p, mean, _)) in enumerate(zip(others, tests, strict=True)):
        if i not in adjusted:
            verdicts.append(
                Verdict(
                    contestant,
                    TIED,
                    n,
                    None,
                    None,
                    f"only {n} items answered by both (< {min_paired}): cannot be shown worse",
                )
            )
        elif adjusted[i] < alpha and mean > 0:
            verdicts.append(
                Verdict(contestant, WORSE, n, p, float(adjusted[i]), f"significantly worse (Holm p < {alpha})")
            )
        else:
            verdicts.append(
                Verdict(contestant, TIED, n, p, float(adjusted[i]), f"not significantly worse (Holm p >= {alpha})")
            )
    tied = [
        verdicts[0],
        *sorted((v for v in verdicts[1:] if v.verdict != WORSE), key=lambda v: tie_key(v.contestant, salt)),
    ]
    worse = sorted(
        (v for v in verdicts if v.verdict == WORSE),
        key=lambda v: (-_finite(v.contestant.score), tie_key(v.contestant, salt)),
    )
    return Decision(tuple(tied + worse), test, alpha)


def _finite(x: float) -> float:
    return float(x) if x is not None and np.isfinite(x) else -np.inf
