"""The live step of a run: questions in, the reference agent asked, a suite of live items out.

A live run (:class:`LiveRequest` in ``RunSpec.live``) keeps its live files in ``RUN_DIR/live/``:

- ``request.json`` — written first: the mode, the agent as the pool file declared it, the run's options
  and every question with its id and domain (given, or inferred: :mod:`pool.live.domains`);
- ``run.sqlite`` — the agent's answers, one row per question (:mod:`pool.live.references`);
- ``references.jsonl`` — per question: its id, text, domain, and the reference answer or why there is
  none (``status``, ``error_class``, ``error_detail``);
- ``items.jsonl`` — the live items (medpool JSONL), one per question the agent answered: ``track: live``,
  ``gold_type: reference``, the answer (decoration stripped) as the gold, ``meta.gold_source:
  live:<agent>``. It is the run's data (its ``--data``), so the run plans, scores, resumes and rescores
  it as any suite, and the agent is never asked again once the run has started.

An item's id is ``live/<agent>/<mode>-<12 hex of the normalised question>`` (``<agent>``: its name, ``/``
written ``_``): the same question, agent and mode give the same id on every night. A question the
agent did not answer (a failed call: timeout, exit status, HTTP error, empty answer) is no item at
all: an infra error charged to the agent, never a candidate's zero. :func:`live_outcome` counts them
for the run's summary and its one line on stderr.

A run stopped while the agent answered (Ctrl-C, SIGKILL) has ``request.json`` and no run store of its
own yet: ``--resume`` asks the agent only the questions it has no answer to, then runs.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.files import atomic_write_lines, atomic_write_text
from eval.items import Item, Source
from eval.items.item import LIVE_TRACK
from pool.config import PoolConfig, PoolConfigError, load_pool
from pool.config.preflight import PreflightError, preflight
from pool.items_source import DataError
from pool.live.agent import ReferenceAgent, reference_agent, strip_decoration
from pool.live.domains import Domain, question_domains
from pool.live.questions import LiveQuestion, LiveRequest, distinct
from pool.live.references import AgentPrompt, Asking
from pool.store.outcome import Result
from pool.store.run_store import RUN_DB_FILENAME

LIVE_DIRNAME = "live"
REQUEST_FILENAME, REFERENCES_FILENAME, ITEMS_FILENAME = "request.json", "references.jsonl", "items.jsonl"
FORMAT, VERSION = "medpool-live-request", 1
SUITE = "live"
# Options that pick items out of a suite: a live run's items are its questions, so give fewer questions instead
# (a filter applied after the agent answered would have paid for answers nobody uses).
SELECTION_OPTIONS = ("track", "task", "domain", "id", "sample", "subset", "limit", "orchestration", "answer_unlabelled")


@dataclass(frozen=True)
class LiveOutcome:
    """What the agent gave: per question a reference or a failure (``references.jsonl``, read back)."""

    agent: str
    mode: str
    questions: int
    failures: tuple[dict[str, Any], ...]  # the references.jsonl rows without a reference

    @property
    def references(self) -> int:
        return self.questions - len(self.failures)

    def summary(self) -> dict[str, Any]:
        """summary.json's ``live`` block."""
        return {
            "agent": self.agent,
            "mode": self.mode,
            "questions": self.questions,
            "references": self.references,
            "agent_infra_errors": len(self.failures),
            "by_error_class": dict(Counter(str(f["error_class"]) for f in self.failures)),
            "note": f"scores are agreement with {self.agent}, not truth",
        }

    def line(self) -> str | None:
        """The run's one line about a failing agent (None when it answered every question)."""
        if not self.failures:
            return None
        classes = ", ".join(f"{name} {n}" for name, n in Counter(str(f["error_class"]) for f in self.failures).items())
        first = self.failures[0]
        return (
            f"reference agent {self.agent}: {len(self.failures)} of {self.questions} question(s) got no reference "
            f"answer ({classes}; e.g. {first['id']}: {first['error_detail'] or first['error_class']}); infra errors "
            f"of the agent, not scored for any candidate ({LIVE_DIRNAME}/{REFERENCES_FILENAME}); a new run asks again"
        )


def live_folder(run_dir: Path) -> Path:
    return Path(run_dir) / LIVE_DIRNAME


def unstarted_live_run(run_dir: Path) -> bool:
    """A live run stopped while its agent answered: its request is written, its run store is not."""
    return (live_folder(run_dir) / REQUEST_FILENAME).is_file() and not (Path(run_dir) / RUN_DB_FILENAME).exists()


def refused_options(options: Mapping[str, Any]) -> list[str]:
    """The item-selection options a live run refuses (see :data:`SELECTION_OPTIONS`), as flags."""
    return ["--" + name.replace("_", "-") for name in SELECTION_OPTIONS if options.get(name) not in (None, False)]


def begin(run_dir: Path, options: Mapping[str, Any], request: LiveRequest) -> list[str]:
    """Write ``live/request.json`` for a new live run; returns notes for stderr (repeats, inferred domains).
    ``options``: the new run's options (``data``: the suites the domain classifier learns from)."""
    refused = refused_options(options)
    if refused:
        raise DataError(
            f"{refused[0]} with --live: a live run's items are its questions, all of them asked of the agent; "
            "give only the questions you want"
        )
    config = load_pool(options["pool"])
    agent = reference_agent(config, options["pool"])
    questions, notes = distinct(request.questions)
    if agent.model is not None and agent.name in _candidates(config, options):
        notes.append(
            f"warning: {agent.name} is the reference agent and a candidate: it is judged against its own "
            "answers; leave it out with --models"
        )
    domains, domain_notes = question_domains(questions, options.get("data"))
    folder = live_folder(run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    document = {
        "format": FORMAT,
        "version": VERSION,
        "mode": request.mode,
        "agent": agent.described(config),
        "options": dict(options),
        "questions": [_question_record(q, d, request.mode) for q, d in zip(questions, domains, strict=True)],
    }
    atomic_write_text(folder / REQUEST_FILENAME, json.dumps(document, ensure_ascii=False, indent=1) + "\n")
    return notes + domain_notes


def stored_request(run_dir: Path) -> dict[str, Any]:
    """``live/request.json`` of a live run, checked enough to be used."""
    path = live_folder(run_dir) / REQUEST_FILENAME
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{path}: cannot read this live run's request ({exc}); start a new run with --out") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT or document.get("version") != VERSION:
        raise DataError(f"{path}: not a live request this medpool reads; start a new run with --out")
    return document


def ask(
    run_dir: Path, options: Mapping[str, Any], run: Callable[[Coroutine[Any, Any, None]], None], log_interval: float
) -> Path | None:
    """Ask the agent every question of ``live/request.json`` it has no answer to, write ``references.jsonl``
    and ``items.jsonl``; returns the items file, or None when the agent answered no question at all.
    ``run`` runs a coroutine to its end (the run's interruptible ``asyncio.run``)."""
    document = stored_request(run_dir)
    folder = live_folder(run_dir)
    try:
        config = load_pool(options["pool"])
    except PoolConfigError as exc:
        raise DataError(str(exc)) from None
    agent = reference_agent(config, options["pool"])
    if json.loads(json.dumps(agent.described(config))) != document["agent"]:
        raise DataError(
            f"{options['pool']}: reference_agent: changed since this live run started "
            f"(it was {document['agent']['name']!r}); restore it, or start a new run with --out"
        )
    if agent.model is not None:
        try:
            preflight(config, options["pool"], [agent.model])
        except PreflightError as exc:
            raise DataError(str(exc)) from None
    mode, records = document["mode"], document["questions"]
    asking = Asking(
        folder,
        config,
        agent,
        [AgentPrompt(r["id"], r["question"], mode) for r in records],
        mode,
        options.get("cache_dir"),
        bool(options.get("no_cache")),
        options.get("cache_max_age"),
        log_interval,
    )
    rows = asking.ask(run)
    references = [_reference_record(r, rows.get(r["id"]), agent, mode) for r in records]
    atomic_write_lines(folder / REFERENCES_FILENAME, (json.dumps(r, ensure_ascii=False) + "\n" for r in references))
    items_file = folder / ITEMS_FILENAME
    items = [
        _item(r, agent, mode, items_file, line) for line, r in enumerate((r for r in references if r["reference"]), 1)
    ]
    atomic_write_lines(items_file, (json.dumps(i.to_record(), ensure_ascii=False) + "\n" for i in items))
    return items_file.resolve() if items else None


def live_outcome(run_dir: Path) -> LiveOutcome | None:
    """What the agent of the live run in ``run_dir`` gave (None: not a live run, or not asked yet)."""
    path = live_folder(run_dir) / REFERENCES_FILENAME
    if not path.is_file():
        return None
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    document = stored_request(run_dir)
    failures = tuple(r for r in rows if r.get("reference") is None)
    return LiveOutcome(document["agent"]["name"], document["mode"], len(rows), failures)


def _candidates(config: PoolConfig, options: Mapping[str, Any]) -> list[str]:
    """The names of the models the run will ask (as ``pool.plan.select_models`` picks them)."""
    if options.get("models"):
        return str(options["models"]).split(",")
    return [m.name for m in (config.models if options.get("all") else config.enabled_models())]


def agent_task(agent: ReferenceAgent) -> str:
    """The live items' task: the agent's name, any ``/`` written ``_`` (a task has no ``/``)."""
    return agent.name.replace("/", "_")


def _question_record(question: LiveQuestion, domain: Domain, mode: str) -> dict[str, Any]:
    return {
        "id": question.live_id(mode),
        "question": question.text,
        "domain": domain.name,
        "domain_inferred": domain.inferred,
        "domain_confidence": domain.confidence,
        "source": question.source,
    }


def _reference_record(
    question: Mapping[str, Any], row: Result | None, agent: ReferenceAgent, mode: str
) -> dict[str, Any]:
    """One line of ``references.jsonl``: the question, and the agent's answer or why there is none."""
    reference = strip_decoration(row.text) if row is not None and row.status != "infra_error" else ""
    if row is None:
        error_class, detail = "not_asked", "no answer recorded (the asking stopped); resume the run"
    elif reference:
        error_class, detail = None, ""
    elif row.status == "infra_error":
        error_class, detail = row.error_class, row.error_detail
    else:
        error_class, detail = "empty", "an empty answer (nothing left once decoration lines are stripped)"
    return {
        **question,
        "agent": agent.name,
        "mode": mode,
        "gold_source": agent.gold_source,
        "status": "ok" if reference else "infra_error",
        "error_class": error_class,
        "error_detail": detail,
        "cached": bool(row.cached) if row is not None else False,
        "latency_s": row.latency_s if row is not None else None,
        "finish_reason": row.finish_reason if row is not None else None,
        "reference": reference or None,
    }


def _item(reference: Mapping[str, Any], agent: ReferenceAgent, mode: str, items_file: Path, line: int) -> Item:
    meta: dict[str, Any] = {
        "gold_source": agent.gold_source,
        "mode": mode,
        "asked_from": reference["source"],
        "domain_inferred": reference["domain_inferred"],
    }
    if reference["domain_inferred"]:
        meta["domain_confidence"] = reference["domain_confidence"]
    task = agent_task(agent)
    return Item(
        id=Item.make_id(SUITE, task, reference["id"]),
        suite=SUITE,
        track=LIVE_TRACK,
        task=task,
        gold_type="reference",
        gold=reference["reference"],
        source=Source(str(items_file), line),
        question=reference["question"],
        domain=reference["domain"],
        meta=meta,
    )
