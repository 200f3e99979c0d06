"""The judges' verdicts on the gold points, asked through the run machinery, and one verdict per point.

Each gold point is a unit ``(gold, <point id>, <the judge's freshness stage>)`` of the audit folder's run
store, sent by :meth:`pool.score.rounds.JudgeRounds.judge_round` through a run :class:`~pool.execute.session.Session`:
the backends' limits and retries, the response cache, and "only units without a finished row are sent",
so a resumed audit never asks a judge again for a verdict it has. The stage is the judge's identity
(``JudgeSetup.stage``: its pool entry, endpoint and the contract's prompt version), so another judge or
prompt never reuses a verdict. A reply that does not parse is re-asked once (stage ``…:reask``); one
still unreadable counts as ``uncertain`` (``unparseable``), never as current or drifted.

A panel (``judges:``) is asked member by member; a point's verdict is the label more than half of the
members that answered agree on (``judge.panel.majority_label``, as side labels are combined), and
``uncertain`` on a split. Three-way labels have no mean or reliability weighting, so the pool's
``panel_rule`` (which combines pass/fail verdicts and scores) does not apply here. A member whose call
failed has no vote; a point no member answered is ``uncertain`` and ``failed`` (the audit exits 1 and
``--resume`` asks again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from judge.contracts.framing import Message
from judge.contracts.table import contract_spec, reask_prompt
from judge.panel import majority_label
from judge.parse.freshness import UNKNOWN_GUIDELINE, FreshnessVerdict
from judge.verdicts import ParseFailure
from pool.config import Model, PoolConfig
from pool.execute.response_cache import ResponseCache
from pool.execute.session import Session
from pool.freshness.points import GoldPoint
from pool.freshness.spec import CONTRACT, RUN_ID
from pool.score.identity import JudgeSetup
from pool.score.rounds import JudgeRounds
from pool.store.outcome import Result, Unit
from pool.store.run_store import RunStore

GOLD = "gold"  # the Unit.model of every audit request: what is under review is the suite's gold, not a model
REASON_CHARS = 200  # of a failed call's detail or a parser's reason, kept in the note
OpinionStatus = Literal["judged", "unparseable", "failed"]


@dataclass(frozen=True)
class Opinion:
    """One judge on one point: its label (None when its call failed), the guideline it named, its note."""

    judge: str
    verdict: str | None
    current_guideline: str
    note: str
    status: OpinionStatus

    def to_json(self) -> dict[str, Any]:
        return {
            "judge": self.judge,
            "verdict": self.verdict,
            "current_guideline": self.current_guideline,
            "note": self.note,
            "status": self.status,
        }


@dataclass(frozen=True)
class PointVerdict:
    """A gold point's verdict: its judges' opinions combined (module doc)."""

    point: GoldPoint
    verdict: str
    current_guideline: str
    note: str
    opinions: tuple[Opinion, ...]

    @property
    def failed(self) -> bool:
        """No judge answered: the verdict is ``uncertain`` only for want of one."""
        return all(o.status == "failed" for o in self.opinions)

    @property
    def split(self) -> bool:
        """Judges answered, but no label had a majority."""
        votes = [o.verdict for o in self.opinions if o.verdict is not None]
        return bool(votes) and majority_label(votes) is None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.point.to_json(),
            "verdict": self.verdict,
            "current_guideline": self.current_guideline,
            "note": self.note,
            "split": self.split,
            "failed": self.failed,
            "judges": [o.to_json() for o in self.opinions],
        }


def combine(point: GoldPoint, opinions: Sequence[Opinion]) -> PointVerdict:
    """One verdict from the members' opinions: the majority label; the guideline and note of the first
    member that gave it (a named guideline preferred over ``unknown``)."""
    votes = [o.verdict for o in opinions if o.verdict is not None]
    label = majority_label(votes)
    if label is None:
        if not votes:
            why = "; ".join(f"{o.judge}: {o.note}" for o in opinions)
            return PointVerdict(point, "uncertain", UNKNOWN_GUIDELINE, f"no verdict ({why})", tuple(opinions))
        said = ", ".join(f"{o.judge}: {o.verdict}" for o in opinions if o.verdict is not None)
        return PointVerdict(point, "uncertain", UNKNOWN_GUIDELINE, f"the judges disagree ({said})", tuple(opinions))
    agreeing = [o for o in opinions if o.verdict == label]
    named = [o.current_guideline for o in agreeing if o.current_guideline != UNKNOWN_GUIDELINE]
    return PointVerdict(point, label, named[0] if named else UNKNOWN_GUIDELINE, agreeing[0].note, tuple(opinions))


def _failed(judge: str, row: Result | None, what: str) -> Opinion:
    detail = f" ({row.error_detail[:REASON_CHARS]})" if row is not None and row.error_detail else ""
    why = "no result" if row is None else f"{row.error_class}{detail}"
    return Opinion(judge, None, UNKNOWN_GUIDELINE, f"{what} failed: {why}", "failed")


def _opinion(judge: str, verdict: FreshnessVerdict) -> Opinion:
    return Opinion(judge, verdict.verdict, verdict.current_guideline, verdict.note, "judged")


async def _member(rounds: JudgeRounds, setup: JudgeSetup, points: Sequence[GoldPoint]) -> list[Opinion]:
    """One judge's opinion on every point: asked once, an unparseable reply re-asked once."""
    spec, store, name = contract_spec(CONTRACT), rounds.store, setup.model.name
    by_id = {p.id: p for p in points}
    asked: dict[str, tuple[Unit, tuple[Message, ...]]] = {
        p.id: (Unit(GOLD, p.id, setup.stage(p.carrier, contract=CONTRACT)), spec.build(p.carrier, p.text))
        for p in points
    }
    await rounds.judge_round(list(asked.values()), setup=setup)
    opinions: dict[str, Opinion] = {}
    again: dict[str, tuple[Unit, tuple[Message, ...]]] = {}
    for point in points:
        unit, messages = asked[point.id]
        row = store.get_result(RUN_ID, unit)
        if row is None or row.status == "infra_error":
            opinions[point.id] = _failed(name, row, "judge call")
            continue
        parsed = spec.parse(point.carrier, row.text)
        if isinstance(parsed, ParseFailure):
            reask = Unit(GOLD, point.id, setup.stage(point.carrier, reask=True, contract=CONTRACT))
            again[point.id] = (reask, reask_prompt(CONTRACT, messages, row.text, parsed.reason))
        else:
            opinions[point.id] = _opinion(name, parsed)
    await rounds.judge_round(list(again.values()), setup=setup)
    for point_id, (unit, _) in again.items():
        row = store.get_result(RUN_ID, unit)
        if row is None or row.status == "infra_error":
            opinions[point_id] = _failed(name, row, "re-ask")
            continue
        parsed = spec.parse(by_id[point_id].carrier, row.text)
        opinions[point_id] = (
            Opinion(name, "uncertain", UNKNOWN_GUIDELINE, f"unparseable: {parsed.reason[:REASON_CHARS]}", "unparseable")
            if isinstance(parsed, ParseFailure)
            else _opinion(name, parsed)
        )
    return [opinions[p.id] for p in points]


async def judge_points(
    config: PoolConfig,
    judges: Sequence[Model],
    points: Sequence[GoldPoint],
    store: RunStore,
    folder: Path,
    cache: ResponseCache | None,
    log_interval: float = 30.0,
) -> tuple[list[PointVerdict], dict[str, int]]:
    """Every point's verdict, and the calls it took (``sent``: to a server tonight; ``cached``: from the
    response cache; verdicts already in the store are neither)."""
    async with Session.open(
        config, judges, folder, run_id=RUN_ID, store=store, cache=cache, retry_infra_errors=True
    ) as session:
        rounds = JudgeRounds(
            run_id=RUN_ID,
            store=store,
            config=config,
            items={},
            judges=judges,
            session=session,
            log_interval=log_interval,
        )
        by_member = [await _member(rounds, setup, points) for setup in rounds.panel]
        counters = session.counters
    verdicts = [combine(point, [opinions[i] for opinions in by_member]) for i, point in enumerate(points)]
    return verdicts, {"sent": counters.calls, "cached": counters.cache_hits}
