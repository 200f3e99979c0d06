"""The scoring stage: judge-free scorers where a gold label exists, the LLM judge where it must.

Judge calls are ordinary units (``stage = judge:<identity hash>``, then ``…:reask`` for the one
re-ask an unparseable verdict gets) sent through the same scheduler, lanes, retries and cache as
answers, and stored in the same run store, so a killed run resumes scoring without paying twice
and ``--rescore`` with another judge adds new stages instead of overwriting old verdicts.
Everything ends up in ``RUN_DIR/scores.jsonl``: one row per (model, item), see ``eval.scores``.
An answer not worth a judge call (empty, or shorter than its gold type's minimum) is scored 0
without one, and re-asked once first when the pool file says so (``pool.score.guards``).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from eval.broad_areas import broad_area_of
from eval.files import atomic_write_lines
from eval.gold_types import RUBRIC_GOLD_TYPES
from eval.items import Item
from eval.scorers import NeedsJudge, score_answer
from eval.scorers.checked import beside_judge, judge_fallback, without_judge
from eval.scorers.judged import AnswerGuard
from eval.scores import JudgeIdentity, Score, family_of
from judge import (
    ParseFailure,
    contract_for,
    hallu_messages,
    judge_messages,
    judged_score,
    parse_reply,
    prompt_version,
    reask_messages,
    unparseable_score,
)
from judge.perturb import PERTURBATION, reversed_dimensions
from pool.config import Model, PoolConfig
from pool.config.schema import NOT_RESULT_SHAPING
from pool.execute.budget import call_cost
from pool.execute.cache_key import normalize_endpoint
from pool.execute.dispatch import Messages
from pool.execute.endpoints import local_model_identity
from pool.execute.progress import ProgressDisplay
from pool.execute.session import Session
from pool.plan import ANSWER_STAGE
from pool.score.anchors import anchor_sample, judge_anchors
from pool.score.criteria_items import grade_criteria_items
from pool.score.guards import answer_guard, guarded_score, reask_guarded
from pool.score.panel import panel_identity, panel_scores
from pool.store.outcome import Result, Unit
from pool.store.run_store import RunStore
from routing.columns import COLUMNS_DIRNAME, write_columns
from routing.load_rows import LoadError

# Answers longer than this are cut before they reach the judge (and the score says so): a 10 MB
# answer must not become a 21 MB judge request. Far above any real answer to one question.
JUDGE_ANSWER_MAX_CHARS = 24_000


@dataclass(frozen=True)
class JudgeSetup:
    model: Model
    backend: str
    endpoint: str = ""  # the judge's endpoint identity: same name on another server is another judge
    backend_type: str = ""

    def identity(self, item: Item, contract: str | None = None) -> JudgeIdentity:
        """Pool name, backend, prompt version and every other field that shapes a verdict (see ``answerer_fields``)."""
        setup = {
            k: v
            for k, v in answerer_fields(self.model, self.backend_type, self.endpoint).items()
            if k not in ("name", "backend")
        }
        return JudgeIdentity.of(self.model.name, self.backend, prompt_version(contract or contract_for(item)), setup)

    def stage(self, item: Item, reask: bool = False, contract: str | None = None) -> str:
        """The stage name of this judge's verdicts: a new judge, server or setting never reuses old ones."""
        key = self.identity(item, contract).key()
        suffix = (":" + contract if contract else "") + (":reask" if reask else "")
        return f"judge:{hashlib.sha256(key.encode('utf-8')).hexdigest()[:10]}{suffix}"


def answerer_fields(model: Model, backend_type: str, endpoint: str) -> dict[str, Any]:
    """Every field that shapes what ``model`` says, as plain JSON values.

    The pool entry minus what does not reach the server (``enabled``, ``notes``) — name, backend,
    model id, mode, temperature, max_tokens, stop, top_p, seed, think, gguf, chat_format, and any
    generation field added later — plus the backend type and the endpoint identity (the URL without
    credentials or query, or ``llamacpp://<weights sha256>/<chat_format>``; ``""`` when unknown).
    """
    fields = model.model_dump(mode="json", exclude={"enabled", "notes", *NOT_RESULT_SHAPING})
    return {**fields, "backend_type": backend_type, "endpoint": normalize_endpoint(endpoint) if endpoint else ""}


def configured_endpoint(config: PoolConfig, model: Model) -> str:
    """The endpoint identity the pool file gives ``model`` without starting anything ("" if unknowable).

    Used only when no live endpoint and no stored answer says which server answered (a run store
    older than the ``endpoint`` column): a remote backend's ``base_url``; for the managed llama.cpp
    server the weights' sha256 identity, or "" when the file is gone.
    """
    backend = config.backends[model.backend]
    if backend.type != "llamacpp":
        return str(getattr(backend, "base_url", ""))
    if model.gguf is None:
        return ""
    try:
        return local_model_identity(model)
    except (OSError, ValueError):
        return ""


def model_identity(config: PoolConfig, model: Model, endpoint: str = "") -> dict[str, Any]:
    """What makes two runs of a model comparable: results differing here are never merged.

    ``endpoint`` is the identity of the server that answered (``Result.endpoint``); when empty the
    pool file's is used (:func:`configured_endpoint`).
    """
    return answerer_fields(model, config.backends[model.backend].type, endpoint or configured_endpoint(config, model))


class ScoringStage:
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
        self.run_id = run_id
        self.store = store
        self.config = config
        self.items = items
        self.session = session
        # Every judge of the run; a panel's first member (its lead) also answers --hallu, --rejudge-sample
        # and --anchor-sample, which ask one judge about its own verdicts.
        self.panel = [
            JudgeSetup(
                judge,
                judge.backend,
                (session.served_identity(judge) if session is not None else "") or configured_endpoint(config, judge),
                backend_type=config.backends[judge.backend].type,
            )
            for judge in judges
        ]
        self.judge = self.panel[0] if self.panel else None
        self.panel_rule = panel_rule
        self.log_interval = log_interval
        self.hallu = hallu
        self.rejudge_sample = rejudge_sample
        self.anchor_sample = anchor_sample
        self.anchors: dict[str, Any] | None = None  # --anchor-sample: fresh verdicts vs the run's (pool.score.anchors)
        self._counts: tuple[dict[str, dict[str, int]], int] | None = None  # taken by write(), reported by tally()
        self._identities: dict[tuple[str, str], dict[str, Any]] = {}
        self.arrivals: ScoredAhead | None = None  # rows scored while answering (pool.score.arrival), taken by run()
        self.reasked: dict[tuple[str, str], Result] = {}  # first answers replaced by their re-ask (pool.score.guards)
        self.reask_records: dict[tuple[str, str], dict[str, Any]] = {}  # details.answer_reasked of those rows
        self.dispatchers = (
            {
                setup.model.name: session.dispatcher({m.name: m for m in config.models}, items, setup.model)
                for setup in self.panel
            }
            if session is not None
            else {}
        )

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

    async def judge_round(
        self, wanted: Sequence[tuple[Unit, Messages]], *, fresh: bool = False, setup: JudgeSetup | None = None
    ) -> None:
        """Plan and run the judge units that have no finished row yet, sent to ``setup`` (default: the
        run's judge, a panel's lead); ``fresh``: the response cache is neither read nor written
        (verdicts asked again tonight, e.g. the judge-drift anchors)."""
        setup = setup or self.judge
        assert setup is not None and self.session is not None
        if not wanted:
            return
        judge, dispatcher = setup.model, self.dispatchers[setup.model.name]
        self.store.save_plan(self.run_id, [unit for unit, _ in wanted], answerer=judge.name)
        pending = {
            unit
            for stage in {unit.stage for unit, _ in wanted}
            for unit in self.store.iter_pending_units(self.run_id, retry_infra_errors=True, stage=stage)
        }
        # Contract by contract, item by item: consecutive verdicts share the judge's system prompt and
        # the question + reference, so a server that keeps the KV cache of the previous prompt's
        # prefix (llama.cpp) reads only the new answer. In plan order (model by model) the contract
        # changed every few items and a 0.5B judge re-read ~1,200 prompt tokens each time.
        ordered = sorted(
            (pair for pair in wanted if pair[0] in pending), key=lambda p: (p[0].stage, p[0].item_id, p[0].model)
        )
        todo = dict(ordered)
        if not todo:
            return
        progress = ProgressDisplay({judge.name: len(todo)}, interval_s=self.log_interval)
        try:
            await self.session.send(
                dispatcher.lanes(todo, todo), progress=progress, fresh=fresh, retry_infra_errors=True
            )
        finally:
            progress.close()

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
                await grade_criteria_items(self, to_judge, scores, self.config.criteria_grading)
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
        for answer, (unit, _) in zip(answers, first):
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
                scores[(answer.model, answer.item_id)] = judged_score(item, answer.text, parsed, identity)
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
                scores[key] = judged_score(item, answer_text[key], parsed, identity, reasked=True)

    def scored_rubric_answers(self, answers: Sequence[Result], scores: Mapping[tuple[str, str], Score]) -> list[Result]:
        """The answers the judge scored on the rubric (reference and criteria items): what ``--hallu``,
        ``--rejudge-sample`` and ``--anchor-sample`` ask the judge about again."""
        return [
            a
            for a in answers
            if self.items[a.item_id].gold_type in RUBRIC_GOLD_TYPES and scores[(a.model, a.item_id)].status == "scored"
        ]

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
        for answer, (unit, _) in zip(wanted, rounds):
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
        ``routing.reliability`` turns the pairs into Cohen's κ and Spearman's ρ.
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
        for answer, (unit, _) in zip(sample, rounds):
            item, key = self.items[answer.item_id], (answer.model, answer.item_id)
            row = self.store.get_result(self.run_id, unit)
            parsed = parse_reply(item, row.text) if row is not None and row.status != "infra_error" else None
            second: dict[str, Any] = {"perturbation": PERTURBATION}
            if parsed is None or isinstance(parsed, ParseFailure):
                second["error"] = "no verdict" if parsed is not None else "judge call failed"
            else:
                again = judged_score(item, answer.text, parsed, self.judge.identity(item))
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
            "family": family_of(item.gold_type),
            **record,
            **({"source_item_id": item.meta["source_item_id"]} if "source_item_id" in item.meta else {}),
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
    """The columnar copy of scores.jsonl that aggregation reads (routing.columns). scores.jsonl is
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


def answer_for_judge(answer: str) -> str:
    """The answer as the judge sees it: cut at ``JUDGE_ANSWER_MAX_CHARS`` (recorded in the score)."""
    if len(answer) <= JUDGE_ANSWER_MAX_CHARS:
        return answer
    return answer[:JUDGE_ANSWER_MAX_CHARS] + f"\n[… {len(answer) - JUDGE_ANSWER_MAX_CHARS} more characters not shown]"
