"""The two files a person or a later tool reads from a run directory.

``RUN_DIR/results.jsonl`` — one JSON object per line, one line per result, sorted by
(model, item_id, stage). Fields:

- ``run_id`` — the run that produced the row.
- ``model`` — the pool's model name; ``item_id`` — the suite item; ``stage`` — ``"answer"``,
  ``"judge"``, or a judge sub-stage.
- ``status`` — ``ok`` (the model answered), ``error`` (answered badly: empty or truncated; a
  real result that scorers see), ``infra_error`` (no answer could be obtained; excluded from
  scores). Refusals are not a status: scorers judge them.
- ``error_class`` — why, when not ok: ``empty`` / ``truncated`` / ``oversize`` (past the backend's
  ``max_response_bytes`` or ``max_answer_chars``) for ``error``; ``connection``,
  ``timeout``, ``rate_limited``, ``server_error``, ``client_error``, ``bad_response``, ``auth``
  for ``infra_error``; otherwise null.
- ``error_detail`` — the error's own words (HTTP status and message, timeout, …); ``""`` when ok.
- ``answered_by`` — the pool model that produced the row: the candidate for ``answer``, the judge
  for ``judge:…`` stages; ``endpoint`` — that model's endpoint identity.
- ``attempts`` — HTTP attempts made (0 for a cache hit); ``retries`` — attempts beyond the first.
- ``latency_s`` — wall time over all attempts (for a cache hit: the original call's).
- ``prompt_tokens`` / ``completion_tokens`` — as the server reported them, or null.
- ``finish_reason`` — as the server said (``stop``, ``length``, ...), or null.
- ``cached`` — true when the answer came from the response cache.
- ``text`` — the raw answer (kept even when truncated; empty for infra errors).
- ``extra`` — object filled by later stages (scores, verdicts); ``{}`` until then.

``RUN_DIR/summary.json`` — see :func:`summarize`; it also names the shape of the run's files:
``schema_version`` (its own) and ``schemas`` (``{file: version}`` for ``results.jsonl``,
``scores.jsonl`` and ``summary.json``), with ``medpool_version``, the version that wrote it. A version
rises when a field changes meaning or goes away, never for a new field; files written before
versions existed have none and are version 1. The JSONL files carry no version of their own: rows
stay one object each, so every reader of them keeps working, and summary.json sits beside them.

Both are written atomically (temp file in the same directory, fsync, ``os.replace``), so a
reader never sees half a file and a crash leaves the previous version.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from eval.files import atomic_write_lines, atomic_write_text
from pool.config import PoolConfig
from pool.store.costs import CostTally
from pool.store.outcome import ANSWER_FLAWS, STATUSES, Result
from pool.store.run_store import RunStore
from pool.store.tallies import Tally
from pool.version import __version__

RESULTS_FILENAME = "results.jsonl"
SUMMARY_FILENAME = "summary.json"
SUMMARY_SCHEMA_VERSION = 1
# The shape of each file a run writes for people and later tools (the manifest, hard.yaml and the
# columnar copy carry their own ``schema_version`` / ``version``).
SCHEMA_VERSIONS = {RESULTS_FILENAME: 1, "scores.jsonl": 1, SUMMARY_FILENAME: SUMMARY_SCHEMA_VERSION}
EXPORT_FIELDS = (
    "run_id",
    "model",
    "item_id",
    "stage",
    "status",
    "error_class",
    "error_detail",
    "answered_by",
    "endpoint",
    "attempts",
    "retries",
    "latency_s",
    "prompt_tokens",
    "completion_tokens",
    "finish_reason",
    "cached",
    "text",
    "extra",
)


def _resolve_run_id(store: RunStore, run_id: str | None) -> str:
    if run_id is not None:
        if store.get_run(run_id) is None:
            raise KeyError(f"{store.path}: no run {run_id!r}")
        return run_id
    runs = store.runs()
    if len(runs) != 1:
        names = ", ".join(r.run_id for r in runs) or "none"
        raise ValueError(f"{store.path}: expected exactly one run, found {names}; pass run_id")
    return runs[0].run_id


def result_record(r: Result) -> dict[str, Any]:
    """The exported view of one result (``EXPORT_FIELDS``, in that order)."""
    return {name: getattr(r, name) for name in EXPORT_FIELDS}


def export_results_jsonl(
    run_dir: Path | str, run_id: str | None = None, *, observe: Callable[[Result], None] | None = None
) -> Path:
    """Write ``RUN_DIR/results.jsonl``; ``run_id`` may be omitted when the dir holds one run.

    Rows stream from the store to the file a page at a time: memory does not grow with the run.
    ``observe`` sees every row, in file order (the run's cost summary rides on this pass).
    """
    run_dir = Path(run_dir)
    path = run_dir / RESULTS_FILENAME

    def lines(rows: Iterable[Result]) -> Iterator[str]:
        for r in rows:
            if observe is not None:
                observe(r)
            yield json.dumps(result_record(r), ensure_ascii=False) + "\n"

    with RunStore(run_dir) as store:
        atomic_write_lines(path, lines(store.iter_results(_resolve_run_id(store, run_id), requests=False)))
    return path


def export_results_with_costs(run_dir: Path | str, run_id: str, config: PoolConfig) -> dict[str, Any]:
    """:func:`export_results_jsonl`, and the run's cost summary (:class:`pool.store.costs.CostTally`) tallied on
    that same pass — what summary.json's ``extra.costs`` holds, whichever process exports."""
    costs = CostTally(config)
    export_results_jsonl(run_dir, run_id, observe=costs.add)
    return costs.summary()


def _tally(results: list[Result], superseded: list[Mapping[str, Any]]) -> dict[str, Any]:
    """Counts for one group of rows; superseded infra errors add to requests and retries."""
    answered = [r.latency_s for r in results if r.status != "infra_error" and not r.cached and r.latency_s is not None]
    return {
        "results": len(results),
        "status": {s: sum(r.status == s for r in results) for s in STATUSES},
        "answer_flaws": {f: sum(r.status == "error" and r.error_class == f for r in results) for f in ANSWER_FLAWS},
        "requests": sum(r.attempts for r in results) + sum(s["attempts"] for s in superseded),
        "retries": sum(r.retries for r in results) + sum(s["retries"] for s in superseded),
        "cache_hits": sum(r.cached for r in results),
        "prompt_tokens": sum(r.prompt_tokens or 0 for r in results),
        "completion_tokens": sum(r.completion_tokens or 0 for r in results),
        "median_latency_s": statistics.median(answered) if answered else None,
    }


def _store_tally(sums: Tally, superseded: tuple[int, int], median: float | None) -> dict[str, Any]:
    """:func:`_tally` from SQL sums (:mod:`pool.store.tallies`): the same keys, the same values."""
    return {
        "results": sums.results,
        "status": {s: getattr(sums, s) for s in STATUSES},
        "answer_flaws": {f: getattr(sums, f) for f in ANSWER_FLAWS},
        "requests": sums.attempts + superseded[0],
        "retries": sums.retries + superseded[1],
        "cache_hits": sums.cache_hits,
        "prompt_tokens": sums.prompt_tokens,
        "completion_tokens": sums.completion_tokens,
        "median_latency_s": median,
    }


def summarize_store(
    store: RunStore, run_id: str, wall_time_s: float, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """:func:`summarize` of a run's stored rows, counted by SQLite (no row is loaded into memory)."""
    tallies, failed_models = store.tallies(run_id), store.failed_models(run_id)

    def superseded(keys: Iterable[tuple[str, str]]) -> tuple[int, int]:
        pairs = [tallies.superseded.get(k, (0, 0)) for k in keys]
        return sum(p[0] for p in pairs), sum(p[1] for p in pairs)

    models: dict[str, Any] = {}
    for model in sorted({who for who, _ in tallies.results} | set(failed_models)):
        stages = sorted(stage for who, stage in tallies.results if who == model)
        stage_tallies = {
            stage: _store_tally(
                tallies.results[(model, stage)], superseded([(model, stage)]), tallies.medians.get((model, stage))
            )
            for stage in stages
        }
        total = sum((tallies.results[(model, stage)] for stage in stages), Tally())
        gone = superseded(k for k in tallies.superseded if k[0] == model)
        models[model] = {
            **_store_tally(total, gone, tallies.medians.get((model, None))),
            "failed": failed_models.get(model),
            "stages": stage_tallies,
        }
    return {
        "wall_time_s": wall_time_s,
        "totals": _store_tally(
            sum(tallies.results.values(), Tally()), superseded(tallies.superseded), tallies.medians.get((None, None))
        ),
        "models": models,
        "extra": dict(extra or {}),
    }


def _answerer(r: Result) -> str:
    return r.answered_by or r.model  # rows stored before answered_by existed: the unit's model


def summarize(
    results: Iterable[Result],
    superseded: Iterable[Mapping[str, Any]],
    failed_models: Mapping[str, str],
    wall_time_s: float,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The summary as a pure function of the stored rows.

    ``{"wall_time_s", "totals": tally, "models": {model: tally + {"failed": reason|null,
    "stages": {stage: tally}}}, "extra"}`` where a tally is ``results``, ``status`` (count per
    ok/error/infra_error), ``answer_flaws`` (the ``error`` rows by reason: truncated at the token
    budget, empty, oversize), ``requests`` (HTTP attempts, including ones whose infra_error row
    was later replaced), ``retries``, ``cache_hits``, ``prompt_tokens``, ``completion_tokens``
    and ``median_latency_s`` (over answered, non-cached rows; null if none). A model's tally
    spans all its stages; read ``stages.answer`` for the answer latency alone.

    Rows are charged to the model that *answered* them (``answered_by``): a judge's verdicts and
    its infra errors count under the judge, never under the candidate they were about.
    """
    results, superseded = list(results), list(superseded)
    answerer = {(r.model, r.item_id, r.stage): _answerer(r) for r in results}
    models: dict[str, Any] = {}
    for model in sorted({_answerer(r) for r in results} | set(failed_models)):
        rows = [r for r in results if _answerer(r) == model]
        gone = [s for s in superseded if answerer.get((s["model"], s["item_id"], s["stage"]), s["model"]) == model]
        stages = {
            stage: _tally([r for r in rows if r.stage == stage], [s for s in gone if s["stage"] == stage])
            for stage in sorted({r.stage for r in rows})
        }
        models[model] = {**_tally(rows, gone), "failed": failed_models.get(model), "stages": stages}
    return {
        "wall_time_s": wall_time_s,
        "totals": _tally(results, superseded),
        "models": models,
        "extra": dict(extra or {}),
    }


def write_summary(
    run_dir: Path | str,
    wall_time_s: float,
    extra: Mapping[str, Any] | None = None,
    run_id: str | None = None,
    counted: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write ``RUN_DIR/summary.json`` (run metadata + :func:`summarize`) and return it. ``counted``:
    :func:`summarize_store` of this run's final store, made elsewhere (pool.run's scoring worker);
    its wall time and extra are replaced by this call's."""
    run_dir = Path(run_dir)
    with RunStore(run_dir) as store:
        rid = _resolve_run_id(store, run_id)
        run = store.get_run(rid)
        assert run is not None
        if counted is None:
            body = summarize_store(store, rid, wall_time_s, extra)
        else:
            body = {**counted, "wall_time_s": wall_time_s, "extra": dict(extra or {})}
    summary = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "schemas": dict(SCHEMA_VERSIONS),
        "medpool_version": __version__,
        "run_id": rid,
        "run_status": run.status,
        "created_at": run.created_at,
        "resumes": run.resumes,
        "pool_fingerprint": run.pool_fingerprint,
        "data_fingerprint": run.data_fingerprint,
        **body,
    }
    atomic_write_text(run_dir / SUMMARY_FILENAME, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    return summary
