"""Which pairs a judge should compare side by side, and the paired decisions judged battles make.

**Pairs that matter** (:func:`tied_pairs`): in every routable bucket whose decision is not decisive
(``routing.decide.manifest.bucket_route``: the leader is not shown better than every other), each
pair of ``tied_top`` models whose 95% intervals overlap — the ties a night's scores could not break
— on the items both answered. Nothing else is asked: a bucket already decided, or a model already
shown worse, would cost judge calls and change no route.

**Budget** (:func:`battles_within`): a battle is one (pair, item), asked once per judge in both
orders (2 calls per judge). The same (pair, item) in several buckets (a domain and its system) is
one battle, judged once. Battles are taken round-robin over the pairs — every pair's first item,
then every pair's second, … — items in a stable order (sha256 of the pair and the item), until
``budget`` calls are spent: a small budget spreads over every tie instead of settling one.

**Judged decision** (:func:`judged_decision`), per bucket, over the judged battles among its
``tied_top``: the leader is the model with the highest judged win rate (points / games, a tie ½;
equal rates keep the score decision's order); it is tested against every other tied model on
their battles with the two-sided mid-p sign test (``mcnemar_midp`` of the leader's wins and
losses, ties dropped — McNemar on the discordant pairs), Holm-adjusted over the comparisons;
``decisive`` = the leader is significantly better than every other tied model. Models the scores
already showed worse stay worse. Judged decisions stand beside the score decisions
(``battles: judged``), never mixed into them.

**In the build** (:func:`judged_board`, :func:`mark_judged`): ``routing.build`` recomputes each undecided
bucket's judged decision from the runs' ``battles.jsonl`` (the battles among its ``tied_top`` on its own
items); a bucket the judged battles decide is routed to their leader and says so (``chosen_by:
judged_battles``, with the judges and their position consistency); a judge whose two orders agree on
fewer than ``LOW_CONSISTENCY`` of its pairs is reported.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from judge.pairwise import PairVerdicts, battle_outcome, position_consistency
from routing.boards.judged import JUDGED, JudgedBattle, judged_ratings
from routing.boards.leaderboard import Bucket, Cell
from routing.decide.manifest import ALPHA, bucket_route, p_number
from routing.load.table import ScoreTable
from routing.stats.intervals import holm, intervals_overlap, mcnemar_midp

CALLS_PER_BATTLE = 2  # both orders, per judge
LOW_CONSISTENCY = 0.6  # a judge whose two orders agree on fewer of its pairs is reported


@dataclass(frozen=True)
class TiedPair:
    """Two tied models of one bucket (``a`` ranked first by the score decision) and the item ids both answered."""

    bucket: str
    a: str
    b: str
    items: tuple[str, ...]


def _cells_by_label(bucket: Bucket) -> dict[str, Cell]:
    """The bucket's cell per model label (the one with the most items when several judges scored a model)."""
    out: dict[str, Cell] = {}
    for cell in bucket.cells:
        label = cell.entrant.model_label
        if label not in out or cell.n > out[label].n:
            out[label] = cell
    return out


def tied_pairs(
    buckets: Sequence[Bucket], table: ScoreTable, min_n: int, floor: float | None = None, alpha: float = ALPHA
) -> tuple[list[TiedPair], dict[str, dict[str, Any]]]:
    """(the pairs that matter, every routable bucket's score decision by id) (module doc)."""
    pairs: list[TiedPair] = []
    routes: dict[str, dict[str, Any]] = {}
    for bucket in buckets:
        entry = bucket_route(bucket, min_n, 0, floor, alpha)
        if not entry["routable"]:
            continue
        routes[bucket.id] = entry
        if entry["decisive"]:
            continue
        cells = _cells_by_label(bucket)
        for a, b in itertools.combinations(entry["tied_top"], 2):
            ca, cb = cells[a], cells[b]
            if not intervals_overlap(bucket.ci_of(ca), bucket.ci_of(cb)):
                continue
            common = np.intersect1d(ca.items, cb.items)
            if len(common):
                pairs.append(TiedPair(bucket.id, a, b, tuple(table.items[int(code)] for code in common)))
    return pairs, routes


def _stable(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def battles_within(pairs: Sequence[TiedPair], budget: int | None, judges: int = 1) -> list[tuple[str, str, str]]:
    """The (a, b, item id) battles to judge, round-robin over ``pairs`` until ``budget`` calls (module doc);
    ``budget`` None: every battle. A battle is ``CALLS_PER_BATTLE × judges`` calls."""
    queues = [[(p.a, p.b, item) for item in sorted(p.items, key=lambda i, p=p: _stable(p.a, p.b, i))] for p in pairs]
    cost = CALLS_PER_BATTLE * max(judges, 1)
    chosen: list[tuple[str, str, str]] = []
    seen: set[tuple[str, str, str]] = set()
    for rank in range(max((len(q) for q in queues), default=0)):
        for queue in queues:
            if rank >= len(queue) or queue[rank] in seen:
                continue
            if budget is not None and (len(chosen) + 1) * cost > budget:
                return chosen
            seen.add(queue[rank])
            chosen.append(queue[rank])
    return chosen


def _points(battles: Sequence[JudgedBattle], model: str) -> tuple[float, int]:
    points, games = 0.0, 0
    for b in battles:
        if model not in (b.a, b.b):
            continue
        games += 1
        points += 0.5 if b.outcome == "tie" else float((b.outcome == "a") == (b.a == model))
    return points, games


def _head_to_head(battles: Sequence[JudgedBattle], leader: str, other: str) -> tuple[int, int, int]:
    """(leader's wins, its losses, ties) over the battles between the two."""
    wins = losses = ties = 0
    for b in battles:
        if {b.a, b.b} != {leader, other}:
            continue
        if b.outcome == "tie":
            ties += 1
        elif (b.outcome == "a") == (b.a == leader):
            wins += 1
        else:
            losses += 1
    return wins, losses, ties


def judged_decision(route: Mapping[str, Any], battles: Sequence[JudgedBattle], alpha: float = ALPHA) -> dict[str, Any]:
    """The bucket's paired decision from judged battles among its score decision's ``tied_top`` (module doc)."""
    tied = list(route["tied_top"])
    among = [b for b in battles if b.a in tied and b.b in tied]
    out: dict[str, Any] = {"battles": JUDGED, "n_battles": len(among), "score_decisive": bool(route["decisive"])}
    if len(tied) < 2 or not among:
        return {**out, "leader": route.get("leader"), "tied_top": tied, "decisive": bool(route["decisive"])}
    rate = {}
    for model in tied:
        points, games = _points(among, model)
        rate[model] = points / games if games else float("nan")
    leader = min(tied, key=lambda m: (-(rate[m] if np.isfinite(rate[m]) else -1.0), tied.index(m)))
    others = [m for m in tied if m != leader]
    records = [_head_to_head(among, leader, m) for m in others]
    p = [float(mcnemar_midp(w, lo)) for w, lo, _ in records]
    adjusted = holm(p) if p else []
    comparisons, still = [], [leader]
    for model, (wins, losses, ties), p_value, p_holm in zip(others, records, p, adjusted, strict=True):
        worse = bool(p_holm < alpha and wins > losses)
        comparisons.append(
            {
                "model": model,
                "wins": wins,
                "losses": losses,
                "ties": ties,
                "p_value": p_number(p_value),
                "p_holm": p_number(float(p_holm)),
                "verdict": "worse" if worse else "tied",
            }
        )
        if not worse:
            still.append(model)
    return {
        **out,
        "leader": leader,
        "win_rates": {m: round(rate[m], 4) if np.isfinite(rate[m]) else None for m in tied},
        "tied_top": still,
        "decisive": len(still) == 1,
        "test": "mcnemar_midp (sign test on judged wins and losses)",
        "alpha": alpha,
        "correction": "holm",
        "comparisons": comparisons,
    }


def _bucket_items(bucket: Bucket, table: ScoreTable) -> set[str]:
    return {table.items[int(code)] for cell in bucket.cells for code in cell.items}


def judged_board(
    buckets: Sequence[Bucket],
    table: ScoreTable,
    routes: Mapping[str, Mapping[str, Any]],
    verdicts: Sequence[PairVerdicts],
    alpha: float = ALPHA,
) -> dict[str, Any] | None:
    """The build's ``judged_battles`` block (None without a judged battle): per judge its position
    consistency (``judge.pairwise.position_consistency``) and a warning when it is low; per bucket the
    score decision left undecided, its judged decision (:func:`judged_decision`) over the battles among
    its ``tied_top`` on its own items, and the judged ratings (``routing.boards.judged``)."""
    battles = [
        JudgedBattle(v.item_id, v.a, v.b, outcome, v.judge)
        for v in verdicts
        if (outcome := battle_outcome(v.ab, v.ba)) is not None
    ]
    if not verdicts:
        return None
    consistency = position_consistency(verdicts)
    out: dict[str, Any] = {
        "battles": JUDGED,
        "judges": consistency,
        "warnings": [w for judge, c in consistency.items() if (w := consistency_warning(judge, c)) is not None],
        "buckets": {},
    }
    for bucket in buckets:
        route = routes.get(bucket.id)
        if route is None or not route.get("routable") or route["decisive"]:
            continue
        items, tied = _bucket_items(bucket, table), set(route["tied_top"])
        among = [b for b in battles if b.item_id in items and b.a in tied and b.b in tied]
        if not among:
            continue
        out["buckets"][bucket.id] = {
            "judged_decision": judged_decision(route, among, alpha),
            "ratings": judged_ratings(among),
            "judges": sorted({b.judge for b in among}),
        }
    return out


def consistency_warning(judge: str, consistency: Mapping[str, Any]) -> str | None:
    """A line for a judge whose two orders agree on fewer than :data:`LOW_CONSISTENCY` of its pairs (its
    battles are mostly ties: it shows a position preference more than a preference between answers)."""
    share = consistency.get("consistent")
    if share is None or share >= LOW_CONSISTENCY:
        return None
    first = consistency.get("first_position")
    leaning = f"; it picked the answer shown first in {first:.0%} of its verdicts" if first is not None else ""
    return (
        f"judge {judge}: position consistency {share:.2f} over {consistency['pairs']} pairs (below "
        f"{LOW_CONSISTENCY}){leaning}: its inconsistent pairs count as ties, so its battles decide little; "
        "a stronger judge is needed to separate these answers"
    )


def mark_judged(routes: dict[str, dict[str, Any]], board: Mapping[str, Any] | None) -> None:
    """Add each bucket's judged decision to its manifest entry (``judged``). A bucket the scores left
    undecided whose judged decision is decisive is routed to the judged leader: ``decisive: true``,
    ``chosen_by: judged_battles``, ``decided_by: judged battles``, ``score_decisive: false``; its
    score fields (``leader``, ``tied_top``, ``candidates``) stay as the scores decided them."""
    if board is None:
        return
    for bucket_id, entry in board["buckets"].items():
        route = routes.get(bucket_id)
        if route is None:
            continue
        decision = entry["judged_decision"]
        route["judged"] = {
            "battles": JUDGED,
            "n_battles": decision["n_battles"],
            "leader": decision["leader"],
            "tied_top": decision["tied_top"],
            "decisive": decision["decisive"],
            "judges": [{"judge": j, **board["judges"].get(j, {})} for j in entry["judges"]],
        }
        if decision["decisive"] and not route["decisive"]:
            route.update(
                model=decision["leader"],
                decisive=True,
                score_decisive=False,
                chosen_by="judged_battles",
                decided_by="judged battles",
            )
