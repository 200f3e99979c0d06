"""The end-to-end smoke: one item per track, sent to every selected model, no judge at all.

The med-agent-verifier README's smoke answers one item per track on the candidate side before
any judge budget is spent, to prove the backend is reachable. Here the items go through the run
API itself (:func:`pool.api.run_pool` with ``no_judge``, ``no_routing`` and ``no_cache``) into a
temporary run folder, so the smoke exercises the same planning, backends (a managed llama.cpp
server is started and stopped as in a run), scheduler and store as the paid run; ``no_cache`` so
that a cached answer cannot hide a dead server. Every (model, item) must come back with a
non-empty answer; a failure names the model, its backend and what the backend said, and keeps
the run folder (``results.jsonl``, the llama.cpp server's log) for a look.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval.items import Item
from pool.api import EXIT_INTERRUPTED, RunInputError, run_pool
from pool.check.outcome import Outcome, failed, passed
from pool.config import Model, PoolConfig
from pool.run_spec import RunSpec
from pool.store.outcome import ANSWER_STAGE

RUN_FOLDER = "smoke"
MAX_ERROR_LINES = 8


def one_per_track(items: Sequence[Item]) -> list[Item]:
    """One scorable item per track (tracks in order of first appearance): the one with the smallest
    answer budget (``max_tokens``; unset counts as the model's whole budget), the first on a tie.
    Reachability needs an answer, not a long one."""
    cheapest: dict[str, Item] = {}
    for item in items:
        held = cheapest.get(item.track)
        if item.scorable and (held is None or _budget(item) < _budget(held)):
            cheapest[item.track] = item
    return list(cheapest.values())


def _budget(item: Item) -> float:
    return float("inf") if item.max_tokens is None else item.max_tokens


def smoke_outcome(
    pool: Path, data: Sequence[Path] | None, config: PoolConfig, models: Sequence[Model], items: Sequence[Item]
) -> Outcome:
    """Send one item per track to each of ``models`` through the run API; judge nothing."""
    chosen = one_per_track(items)
    folder = Path(tempfile.mkdtemp(prefix="medpool-check-"))
    spec = RunSpec(
        pool=str(pool),
        data=[str(p) for p in data] if data else None,
        models=[m.name for m in models],
        id=[i.id for i in chosen],
        orchestration=any(i.track == "orchestration" for i in chosen),
        no_judge=True,
        no_routing=True,
        no_cache=True,
        out=folder / RUN_FOLDER,
        history_root=folder,
    )
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):  # the run's progress lines; its errors are quoted on failure
            result = run_pool(spec)
    except RunInputError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        return failed("smoke", f"the run refused the smoke's input: {exc}", "fix what is named, then check again")
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    if result.exit_code == EXIT_INTERRUPTED:
        shutil.rmtree(folder, ignore_errors=True)
        raise KeyboardInterrupt
    rows = _answers(result.run_dir)
    problems = []
    for model in models:
        missing = [why for item in chosen if (why := _why(rows.get((model.name, item.id))))]
        if missing:
            problems.append(
                f"model {model.name} (backend {model.backend!r}{_where(config, model)}): "
                f"{len(missing)} of {len(chosen)} item(s) without an answer: {_grouped(missing)}"
            )
    tracks = ", ".join(i.track for i in chosen)
    if problems or result.exit_code != 0:
        what = (
            f"{len(problems)} of {len(models)} model(s) did not answer every item"
            if problems
            else f"the smoke's run ended with exit code {result.exit_code}"
        )
        return failed(
            "smoke",
            what,
            "make the named backend answer — start its server or fix its base_url (connection), raise its "
            "timeout_s or free the machine (timeout), check its key (auth) — then check again; the smoke's "
            f"run folder is kept: {result.run_dir}",
            [*problems, *_error_lines(said.getvalue())],
        )
    shutil.rmtree(folder, ignore_errors=True)
    return passed(
        "smoke",
        f"{len(models)} model(s) × {len(chosen)} item(s) (one per track: {tracks}) answered, "
        "every answer non-empty; no judge called",
    )


def _answers(run_dir: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The answer rows of ``results.jsonl`` by (model, item); empty when the run wrote none."""
    path = run_dir / "results.jsonl"
    if not path.is_file():
        return {}
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {(r["model"], r["item_id"]): r for r in rows if r.get("stage") == ANSWER_STAGE}


def _why(row: dict[str, Any] | None) -> str | None:
    """Why this row is not a non-empty answer, or None when it is."""
    if row is None:
        return "no result recorded (the run stopped; see below)"
    if row["status"] == "infra_error":
        return f"{row['error_class']}: {row['error_detail']}".rstrip(": ")
    if not (row.get("text") or "").strip():
        return "empty answer"
    return None


def _where(config: PoolConfig, model: Model) -> str:
    backend = config.backend_of(model)
    url = getattr(backend, "base_url", None)
    return f", {backend.type} at {url}" if url else f", {backend.type}"


def _grouped(reasons: list[str]) -> str:
    counts: dict[str, int] = {}
    for reason in reasons:
        counts[reason] = counts.get(reason, 0) + 1
    return "; ".join(f"{n}× {reason}" if n > 1 else reason for reason, n in counts.items())


def _error_lines(text: str) -> list[str]:
    """The run's own error report (from its first ``error:`` line), at most MAX_ERROR_LINES lines."""
    lines = text.splitlines()
    start = next((n for n, line in enumerate(lines) if line.startswith("error:")), len(lines))
    kept = [line for line in lines[start:] if line.strip()]
    return kept[:MAX_ERROR_LINES]
