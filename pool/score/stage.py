"""The scoring stage: judge-free scorers where a gold label exists, the LLM judge where it must.

Judge calls are ordinary units (``stage = judge:<identity hash>``, then ``…:reask`` for the one
re-ask an unparseable verdict gets) sent through the same scheduler, lanes, retries and cache as
answers, and stored in the same run store, so a killed run resumes scoring without paying twice
and ``--rescore`` with another judge adds new stages instead of overwriting old verdicts.
Everything ends up in ``RUN_DIR/scores.jsonl``: one row per (model, item), see ``eval.items.scores``.
An answer not worth a judge call (empty, or shorter than its gold type's minimum) is scored 0
without one, and re-asked once first when the pool file says so (``pool.score.guards``).
"""

from __future__ import annotations

import heapq
import json
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Protocol

from eval.files import atomic_write_lines
from eval.items import Item
from eval.items.broad_areas import broad_area_of
from eval.items.scores import JudgeIdentity, Score, item_family
from eval.scorers import NeedsJudge, score_answer
from eval.scorers.checked import beside_judge, judge_fallback, without_judge
from eval.scorers.judged import AnswerGuard
from judge import (
    ParseFailure,
    hallu_messages,
    judge_messages,
    judged_score,
    parse_reply,
    reask_messages,
    unparseable_score,
)
from judge.perturb import PERTURBATION, reversed_dimensions
from pool.config import Model, PoolConfig
from pool.execute.budget import call_cost
from pool.execute.session import Session
from pool.plan import ANSWER_STAGE
from pool.score.anchors import anchor_sample, judge_anchors
from pool.score.criteria_items import grade_criteria_items
from pool.score.guards import answer_guard, guarded_score, reask_guarded
from pool.score.identity import JudgeSetup, model_identity
from pool.score.panel import panel_identity, panel_scores
from pool.score.rounds import JUDGE_ANSWER_MAX_CHARS, JudgeRounds, answer_for_judge, weighed
from pool.store.outcome import Result, Unit
from pool.store.run_store import RunStore
from routing.load.columns import COLUMNS_DIRNAME, write_columns
from routing.load.rows import LoadError


class ScoringStage(JudgeRounds):
    """Scores every stored answer of a run; judge calls go through the run's ``session``."""

    def __init__(
        self,
        *,
        run_id: str,
        store: RunStore,
        config: PoolConfig,
        items: Mapping[str, Item],
        judges: Sequence[Model],
        session: Session | None,
        panel_rule: str = "majority",
        log_interval: float = 30.0,
        hallu: bool = False,
        rejudge_sample: int = 0,
        anchor_sample: int = 0,
    ) -> None:
        super().__init__(
            run_id=run_id,
            store=store,
            config=config,
            items=items,
            judges=judges,
            session=session,
            log_interval=log_interval,
        )
        self.panel_rule = panel_rule
        self.hallu = hallu
        self.rejudge_sample = rejudge_sample
        self.anchor_sample = anchor_sample
        self.anchors: dict[str, Any] | None = None  # --anchor-sample: fresh verdicts vs the run's (pool.score.anchors)
        self._counts: tuple[dict[str, dict[str, int]], int] | None = None  # taken by write(), reported by tally()
        self._identities: dict[tuple[str, str], dict[str, Any]] = {}
        self.arrivals: ScoredAhead | None = None  # rows scored while answering (pool.score.arrival), taken by run()

    def _answers(self, arrivals: ScoredAhead | None) -> Iterator[Result]:
        """The run's answers to this run's items to score, streamed from the store in (model, item_id)
        order. An answer whose row ``arrivals`` holds is not read: its row, made when it arrived, goes
        to the spool in its place (so the spool keeps that order)."""
        if arrivals is None:
            yield from (
                r
                for r in self.store.iter_results(self.run_id, stage=ANSWER_STAGE, requests=False)
                if r.item_id in self.items
            )
            return
        for model, item_id in self.store.iter_result_keys(self.run_id, ANSWER_STAGE):
            if item_id not in self.items:
                continue
            entry = arrivals.take(model, item_id)
            if entry is not None:
                self._rows.spool_entry(entry)
                continue
            answer = self.store.get_result(self.run_id, Unit(model, item_id, ANSWER_STAGE))
            if answer is not None:
                yield answer

    def arrival_entry(self, answer: Result) -> str | None:
        """The spool entry of a judge-free answer's row, made before :meth:`run` (by the worker of
        :mod:`pool.score.arrival`, while the run is still answering); None for what :meth:`run`
        must do itself: judged items, infra errors, other stages, items not in this run, and an
        answer whose scorer raises (run() scores it again and raises there)."""
        if answer.stage != ANSWER_STAGE or answer.status == "infra_error" or answer.item_id not in self.items:
            return None
        try:
            outcome = score_answer(self.items[answer.item_id], answer.text, answer.status)
            if isinstance(outcome, NeedsJudge):
                return None
            return _spool_entry(self._row(answer, outcome))
        except Exception:  # noqa: BLE001 - see the docstring
            return None

    async def run(self) -> None:
        """Score every answer; :meth:`write` writes scores.jsonl and :meth:`tally` counts it.

        Answers stream from the store: a judge-free score's row goes straight to a spool file,
        so only the answers the judge must see (and their scores) are held in memory. Rows
        the arrival worker made during answering (:attr:`arrivals`) are copied, not scored again.
        """
        self._rows = _RowSpool(self.store.run_dir)
        scores: dict[tuple[str, str], Score] = {}
        to_judge: list[Result] = []
        guarded: list[tuple[Result, AnswerGuard]] = []  # not worth a judge call (pool.score.guards)
        checked: dict[tuple[str, str], NeedsJudge] = {}  # judged answers of items with an objective check
        arrivals, self.arrivals = self.arrivals, None
        for answer in self._answers(arrivals):  # the rows scored when they arrived are copied on the way
            item = self.items[answer.item_id]
            outcome = score_answer(item, answer.text, answer.status)
            if isinstance(outcome, NeedsJudge):
                if self.judge is None:
                    self._rows.spool(self._row(answer, without_judge(outcome, "the pool has no judge: block")))
                else:
                    guard = answer_guard(item, answer)
                    if guard is None:
                        to_judge.append(answer)
                    else:
                        guarded.append((answer, guard))
                    if outcome.objective is not None or outcome.check_failed is not None:
                        checked[(answer.model, answer.item_id)] = outcome
            else:
                self._rows.spool(self._row(answer, outcome))
        if arrivals is not None:
            arrivals.close()
        still: list[tuple[Result, AnswerGuard, dict[str, Any] | None]] = [(a, g, None) for a, g in guarded]
        if guarded and self.config.reask_short_answers:
            again, still = await reask_guarded(self, guarded)
            to_judge += again
        for answer, guard, record in still:
            item = self.items[answer.item_id]
            scores[(answer.model, answer.item_id)] = guarded_score(
                item, answer.text, guard, self.verdict_identity(item), record
            )
        if to_judge:
            await self._judge(to_judge, scores)
            if self.config.criteria_grading != "holistic":
                await grade_criteria_items(self, to_judge, scores, self.config.criteria_grading, self.panel_rule)
            if self.rejudge_sample:
                await self._rejudge(to_judge, scores)
            if self.anchor_sample:
                self.anchors = await judge_anchors(self, to_judge, scores, self.anchor_sample)
            if self.hallu:
                await self._hallucination_check(to_judge, scores)
            for answer in to_judge:
                if len(answer.text) > JUDGE_ANSWER_MAX_CHARS:
                    key = (answer.model, answer.item_id)
                    cut = {"chars": len(answer.text), "sent": JUDGE_ANSWER_MAX_CHARS}
                    scores[key] = replace(
                        scores[key], details={**scores[key].details, "answer_truncated_for_judge": cut}
                    )
        for key, outcome in checked.items():  # the check's score first, the judge's beside it
            if outcome.objective is not None:
                scores[key] = beside_judge(outcome.objective, scores[key])
            elif outcome.check_failed is not None:
                scores[key] = judge_fallback(scores[key], outcome.check_failed)
        for key, record in self.reask_records.items():
            if key in scores and "answer_reasked" not in scores[key].details:
                scores[key] = replace(scores[key], details={**scores[key].details, "answer_reasked": record})
        self._rows.judged = [
            self._row(answer, scores[(answer.model, answer.item_id)])
            for answer in [*to_judge, *(a for a, _, _ in still)]
        ]

    def verdict_identity(self, item: Item) -> JudgeIdentity:
        """Who judges ``item`` in this run: the judge, or the panel (``pool.score.panel``)."""
        assert self.judge is not None
        return panel_identity(self.panel, self.panel_rule, item) if len(self.panel) > 1 else self.judge.identity(item)

    async def _judge(self, answers: list[Result], scores: dict[tuple[str, str], Score]) -> None:
        """One verdict per answer: the judge's, or the panel's aggregate of every member's (``pool.score.panel``)."""
        if len(self.panel) == 1:
            await self._member_verdicts(self.panel[0], answers, scores)
            return
        by_member: list[dict[tuple[str, str], Score]] = []
        for setup in self.panel:  # member by member: each member's stages resume and cache on their own
            member_scores: dict[tuple[str, str], Score] = {}
            await self._member_verdicts(setup, answers, member_scores)
            by_member.append(member_scores)
        scores.update(panel_scores(self.panel, self.panel_rule, self.items, answers, by_member))

    async def _member_verdicts(
        self, judge: JudgeSetup, answers: list[Result], scores: dict[tuple[str, str], Score]
    ) -> None:
        """``judge``'s verdict on every answer, with one re-ask for an unparseable reply."""
        first = []
        for answer in answers:
            item = self.items[answer.item_id]
            first.append(
                (
                    Unit(answer.model, answer.item_id, judge.stage(item)),
                    judge_messages(item, answer_for_judge(answer.text)),
                )
            )
        await self.judge_round(first, setup=judge)
        reask = []
        verdicts: dict[tuple[str, str], Any] = {}
        answer_text = {(a.model, a.item_id): a.text for a in answers}
        for answer, (unit, _) in zip(answers, first, strict=True):
            item = self.items[answer.item_id]
            identity = judge.identity(item)
            row = self.store.get_result(self.run_id, unit)
            if row is None or row.status == "infra_error":
                reason = "judge call failed" if row is None else f"judge call failed: {row.error_class}"
                scores[(answer.model, answer.item_id)] = unparseable_score(identity, reason, "")
                continue
            parsed = parse_reply(item, row.text)
            if isinstance(parsed, ParseFailure):
                reask.append(
                    (
                        Unit(answer.model, answer.item_id, judge.stage(item, reask=True)),
                        reask_messages(item, answer_for_judge(answer.text), row.text),
                    )
                )
                verdicts[(answer.model, answer.item_id)] = parsed
            else:
                score = judged_score(item, answer.text, parsed, identity)
                scores[(answer.model, answer.item_id)] = weighed(judge, item, score, row)
        await self.judge_round(reask, setup=judge)
        for unit, _ in reask:
            item = self.items[unit.item_id]
            identity = judge.identity(item)
            row = self.store.get_result(self.run_id, unit)
            parsed = parse_reply(item, row.text) if row is not None and row.status != "infra_error" else None
            key = (unit.model, unit.item_id)
            if parsed is None or isinstance(parsed, ParseFailure):
                first_failure = verdicts[key]
                reason = f"unparseable judge reply after one re-ask ({getattr(first_failure, 'reason', first_failure)})"
                scores[key] = unparseable_score(identity, reason, row.text if row is not None else "")
            else:
                score = judged_score(item, answer_text[key], parsed, identity, reasked=True)
                scores[key] = weighed(judge, item, score, row)

    async def _hallucination_check(self, answers: list[Result], scores: dict[tuple[str, str], Score]) -> None:
        """``--hallu``: claim-level labels for judged reference/criteria answers, added to their metrics.

        unsupported_rate = Σunsupported / Σclaims and factual_precision = sup / (sup + unsup) per
        answer; a reply that stays unparseable after one re-ask leaves the rubric score as it is and
        records ``hallu: "no verdict"`` in its details.
        """
        assert self.judge is not None
        wanted = self.scored_rubric_answers(answers, scores)
        rounds = [
            (
                Unit(a.model, a.item_id, self.judge.stage(self.items[a.item_id], contract="hallu")),
                hallu_messages(self.items[a.item_id], answer_for_judge(a.text)),
            )
            for a in wanted
        ]
        await self.judge_round(rounds)
        retry, parsed_by_key = [], {}
        for answer, (unit, _) in zip(wanted, rounds, strict=True):
            row = self.store.get_result(self.run_id, unit)
            parsed = (
                parse_reply(self.items[answer.item_id], row.text, contract="hallu")
                if row and row.status != "infra_error"
                else None
            )
            if parsed is None or isinstance(parsed, ParseFailure):
                retry.append(
                    (
                        Unit(answer.model, answer.item_id, self.judge.stage(self.items[answer.item_id], True, "hallu")),
                        reask_messages(
                            self.items[answer.item_id],
                            answer_for_judge(answer.text),
                            row.text if row else "",
                            contract="hallu",
                        ),
                    )
                )
            else:
                parsed_by_key[(answer.model, answer.item_id)] = parsed
        await self.judge_round(retry)
        for unit, _ in retry:
            row = self.store.get_result(self.run_id, unit)
            parsed = (
                parse_reply(self.items[unit.item_id], row.text, contract="hallu")
                if row and row.status != "infra_error"
                else None
            )
            if parsed is not None and not isinstance(parsed, ParseFailure):
                parsed_by_key[(unit.model, unit.item_id)] = parsed
        for answer in wanted:
            key = (answer.model, answer.item_id)
            score = scores[key]
            parsed = parsed_by_key.get(key)
            if parsed is None:
                scores[key] = replace(score, details={**score.details, "hallu": "no verdict"})
                continue
            extra = {name: float(v) for name, v in parsed.metrics().items() if v is not None}
            scores[key] = replace(
                score,
                metrics={**score.metrics, **extra},
                details={
                    **score.details,
                    "claims": {k: parsed.count(k) for k in ("supported", "unsupported", "not_sure")},
                    "hallu_claims": [{"text": c.text, "label": c.label} for c in parsed.claims][:50],
                },
            )

    async def _rejudge(self, answers: list[Result], scores: dict[tuple[str, str], Score]) -> None:
        """``--rejudge-sample N``: N rubric verdicts judged again, by the same judge, on a perturbed prompt.

        The sample is the first N scored reference/criteria answers ordered by sha256(model, item)
        (stable across resumes, spread over models); the prompt lists the rubric dimensions in reverse
        order (``judge.perturb``). The second verdict — total and pass after the same safety floor —
        goes into ``details["rejudge"]`` (no re-ask: a failure is recorded as such);
        ``routing.judges.reliability`` turns the pairs into Cohen's κ and Spearman's ρ.
        """
        assert self.judge is not None
        sample = anchor_sample(self.scored_rubric_answers(answers, scores), self.rejudge_sample)
        rounds = [
            (
                Unit(a.model, a.item_id, self.judge.stage(self.items[a.item_id]) + ":rejudge"),
                reversed_dimensions(judge_messages(self.items[a.item_id], answer_for_judge(a.text))),
            )
            for a in sample
        ]
        await self.judge_round(rounds)
        for answer, (unit, _) in zip(sample, rounds, strict=True):
            item, key = self.items[answer.item_id], (answer.model, answer.item_id)
            row = self.store.get_result(self.run_id, unit)
            parsed = parse_reply(item, row.text) if row is not None and row.status != "infra_error" else None
            second: dict[str, Any] = {"perturbation": PERTURBATION}
            if parsed is None or isinstance(parsed, ParseFailure):
                second["error"] = "no verdict" if parsed is not None else "judge call failed"
            else:
                # weighed as the first verdict was: pass/fail agreement compares like with like
                again = weighed(
                    self.judge, item, judged_score(item, answer.text, parsed, self.judge.identity(item)), row
                )
                second.update(total=again.metrics["total"], passed=again.passed, value=again.value)
            lead = (scores[key].details.get("panel") or {}).get("members", [{}])[0]
            if "total" in lead:  # a panel's row holds the panel's verdict: compare the lead with its own
                second.update(first_total=lead["total"], first_passed=lead["passed"])
            scores[key] = replace(scores[key], details={**scores[key].details, "rejudge": second})

    def _row(self, answer: Result, score: Score) -> dict[str, Any]:
        item = self.items[answer.item_id]
        model = self.config.model(answer.model)
        record = score.to_record()
        if answer.status == "error" and answer.error_class:  # truncated / empty / oversize, counted in the leaderboard
            record["details"] = {**record["details"], "answer_flaw": answer.error_class}
        price = self.config.price_of(model)
        cost = call_cost(price, answer.prompt_tokens, answer.completion_tokens)
        first = self.reasked.get((answer.model, answer.item_id))
        if first is not None:  # a re-asked answer: both calls were paid
            first_cost = call_cost(price, first.prompt_tokens, first.completion_tokens)
            cost = None if cost is None or first_cost is None else cost + first_cost
        return {
            "model": answer.model,
            "item_id": item.id,
            "suite": item.suite,
            "track": item.track,
            "task": item.task,
            "domain": item.domain,
            "broad_area": broad_area_of(item),
            "gold_type": item.gold_type,
            "family": item_family(item.gold_type, item.track),
            **record,
            **({"source_item_id": item.meta["source_item_id"]} if "source_item_id" in item.meta else {}),
            **({"gold_source": item.meta["gold_source"]} if "gold_source" in item.meta else {}),
            "answer_status": answer.status,
            "latency_s": answering_latency(answer),
            "completion_tokens": answer.completion_tokens,
            "prompt_tokens": answer.prompt_tokens,
            # what this answer costs at the pool's prices, cached or not (null: the model has no price)
            "cost": cost,
            "model_identity": self._model_identity(model, answer.endpoint),
        }

    def _model_identity(self, model: Model, endpoint: str) -> dict[str, Any]:
        """:func:`model_identity`, remembered per (model, endpoint): a row costs no file hashing."""
        key = (model.name, endpoint)
        if key not in self._identities:
            self._identities[key] = model_identity(self.config, model, endpoint)
        return dict(self._identities[key])

    def write(self, run_dir: Path) -> Path:
        """``RUN_DIR/scores.jsonl``, sorted by (model, item_id), written as the rows stream in; the
        counts :meth:`tally` reports are taken in the same pass."""
        path = run_dir / "scores.jsonl"
        counts: dict[str, dict[str, int]] = {}
        unparseable = 0

        def counted_lines() -> Iterator[str]:
            nonlocal unparseable
            for meta, line in self._rows.merged():  # in row order, so families appear as in a sorted list
                family_name, status, unparseable_count = meta[2:]
                family = counts.setdefault(family_name, {})
                family[status] = family.get(status, 0) + 1
                unparseable += unparseable_count
                yield line

        atomic_write_lines(path, counted_lines())
        self._counts = (counts, unparseable)
        _write_columns(run_dir)
        return path

    def tally(self) -> dict[str, Any]:
        """Counts for summary.json (taken by :meth:`write`): per family and status, and the judge's
        unparseable verdicts."""
        if self._counts is None:
            raise RuntimeError("ScoringStage.tally() counts what write() wrote: call write() first")
        counts, unparseable = self._counts
        judge = None if self.judge is None else {"model": self.judge.model.name, "backend": self.judge.backend}
        if judge is not None and len(self.panel) > 1:
            judge["panel"] = [{"model": setup.model.name, "backend": setup.backend} for setup in self.panel]
            judge["rule"] = self.panel_rule
        return {"by_family": counts, "judge": judge, "judge_infra_errors": unparseable, "anchors": self.anchors}


def _write_columns(run_dir: Path) -> None:
    """The columnar copy of scores.jsonl that aggregation reads (routing.load.columns). scores.jsonl is
    the record: when the copy cannot be written (a full disk, say) the run goes on and readers
    take scores.jsonl, as they do for run folders written before the copy existed."""
    try:
        write_columns(run_dir)
    except (OSError, LoadError) as exc:
        print(
            f"warning: {run_dir / COLUMNS_DIRNAME} not written ({exc}); routing reads scores.jsonl instead",
            file=sys.stderr,
        )


class _RowSpool:
    """The scores.jsonl rows of a run without holding them: judge-free rows are spooled to an
    anonymous file in the run folder (in the store's (model, item_id) order) as they are scored,
    the judged rows are kept (their answers are held for the judge anyway) and merged in order.

    A spooled line is ``meta TAB row``: meta is the JSON list (model, item_id, family, status,
    unparseable count) that sorting and the counts of :meth:`ScoringStage.write` need; JSON text holds no raw tab.
    """

    def __init__(self, folder: Path) -> None:
        # Lives as long as the stage; anonymous, so the OS removes it on close or when the process dies.
        self.file = tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n", dir=folder)  # noqa: SIM115
        self.judged: list[dict[str, Any]] = []

    def spool(self, row: dict[str, Any]) -> None:
        self.file.write(_spool_entry(row))

    def spool_entry(self, entry: str) -> None:
        """A row already serialised by :func:`_spool_entry` (in the store's order like the rest)."""
        self.file.write(entry)

    def merged(self) -> Iterator[tuple[list[Any], str]]:
        """(meta, line) of every row, sorted by (model, item_id)."""
        self.file.seek(0)
        spooled = ((json.loads(head), line) for head, _, line in (entry.partition("\t") for entry in self.file))
        judged = (_meta_and_line(row) for row in sorted(self.judged, key=lambda r: (r["model"], r["item_id"])))
        return heapq.merge(spooled, judged, key=lambda pair: (pair[0][0], pair[0][1]))


class ScoredAhead(Protocol):
    """Rows scored before :meth:`ScoringStage.run` (:class:`pool.score.arrival.ArrivalRows`): run()
    takes each back in the store's order, or scores it itself when ``take`` gives None."""

    def take(self, model: str, item_id: str) -> str | None: ...

    def close(self) -> None: ...


def _spool_entry(row: dict[str, Any]) -> str:
    """``meta TAB row`` (see :class:`_RowSpool`), one line."""
    meta, line = _meta_and_line(row)
    return json.dumps(meta, ensure_ascii=False) + "\t" + line


def _meta_and_line(row: dict[str, Any]) -> tuple[list[Any], str]:
    unparseable = int(
        row["status"] == "infra_error" and row.get("judge") is not None and row["answer_status"] != "infra_error"
    )
    unparseable += "judge_error" in row["details"]  # a checked answer the judge gave no verdict on
    meta = [row["model"], row["item_id"], row["family"], row["status"], unparseable]
    return meta, json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n"


def answering_latency(answer: Result) -> float | None:
    """How long the attempt that answered took: failed attempts and backoff waits are the
    endpoint's noise, not the model's speed, and must not reorder a latency tie rule."""
    attempts = answer.extra.get("attempts") if isinstance(answer.extra, dict) else None
    if attempts and isinstance(attempts[-1], dict) and isinstance(attempts[-1].get("latency_s"), (int, float)):
        return float(attempts[-1]["latency_s"])
    return answer.latency_s
