"""The run store read a page at a time and counted in SQL give exactly what the whole-list paths gave.

The driver streams pending units, results and the summary so its memory stays flat in the number of
units; these tests pin that each streamed or SQL-counted view equals the in-memory one: page
boundaries (pages of 3 rows here) lose and repeat nothing, and ``summary.json`` from SQL equals
:func:`pool.store.export.summarize` over the same rows.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pool.store.run_store as store_module
from pool.execute.cache_key import (
    CACHE_KEY_VERSION,
    cache_key_of_json,
    canonical_json,
    normalize_endpoint,
    request_payload,
)
from pool.store.export import export_results_jsonl, result_record, summarize, summarize_store
from pool.store.outcome import Result, Unit, result_from_response
from pool.store.run_store import RunStore
from runners.base import (
    Attempt,
    GenerationParams,
    GenerationRequest,
    GenerationResponse,
)

RUN = "r1"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> RunStore:
    monkeypatch.setattr(store_module, "_CHUNK_ROWS", 3)
    s = RunStore(tmp_path)
    s.begin_run(RUN, pool_fingerprint="p", data_fingerprint="d", options={})
    return s


def _response(rng: random.Random) -> GenerationResponse:
    error = rng.choice([None, None, None, "timeout", "connection"])
    n = rng.randint(1, 3)
    attempts = tuple(Attempt(k, 200 if error is None else None, error, 0.1 * k) for k in range(1, n + 1))
    text = rng.choice(["Answer: B", "", "partial"]) if error is None else ""
    return GenerationResponse(
        text,
        rng.choice(["stop", "length"]),
        rng.choice([None, 7, 12]),
        rng.choice([None, 3]),
        rng.choice([None, round(rng.random(), 3), 0.25, 0.5]),
        attempts,
        error,
        "boom" if error else "",
        None,
    )


def _result(unit: Unit, response: GenerationResponse, *, cached: bool = False, answered_by: str = "") -> Result:
    request = GenerationRequest(unit.model, messages=({"role": "user", "content": unit.item_id},))
    return result_from_response(
        RUN,
        unit,
        response,
        request_json=canonical_json(request_payload(request)),
        cache_key=None,
        started_at="2025-01-01T00:00:00.000+00:00",
        finished_at="2025-01-01T00:00:01.000+00:00",
        cached=cached,
        answered_by=answered_by,
    )


def _fill(store: RunStore, seed: int, *, cached_infra_errors: bool = True) -> list[Unit]:
    """A run of candidates, a judge (stages charged to it), retried infra errors and a failed model;
    ``cached_infra_errors=False`` keeps the scheduler's rule that a cache hit is an answer."""
    rng = random.Random(seed)
    units = [
        Unit(m, f"i{k:02d}", stage)
        for m in ("b", "a", "c")
        for k in range(rng.randint(0, 9))
        for stage in ("answer", "judge:x")
    ]
    store.save_plan(RUN, [u for u in units if u.stage == "answer"])
    store.save_plan(RUN, [u for u in units if u.stage != "answer"], answerer="judge")
    for unit in units:
        if rng.random() < 0.2:
            continue  # still pending
        answerer = "judge" if unit.stage != "answer" else unit.model
        response = _response(rng)
        cached = rng.random() < 0.2 and (response.ok or cached_infra_errors)
        store.record(_result(unit, response, cached=cached, answered_by=answerer))
        if rng.random() < 0.5:  # a retry resume: replaces an infra_error row only
            store.record(_result(unit, _response(rng), answered_by=answerer), retry_infra_errors=True)
    if rng.random() < 0.5:
        store.mark_model_failed(RUN, "c", "server never came up")
        store.mark_model_failed(RUN, "ghost", "no answer at all")
    return units


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10**6))
def test_summary_counted_in_sql_equals_summarize(tmp_path_factory: pytest.TempPathFactory, seed: int) -> None:
    with RunStore(tmp_path_factory.mktemp("run")) as store:
        store.begin_run(RUN, pool_fingerprint="p", data_fingerprint="d", options={})
        _fill(store, seed)
        expected = summarize(
            store.results(RUN), store.superseded_infra_errors(RUN), store.failed_models(RUN), 1.5, {"x": 1}
        )
        assert json.dumps(summarize_store(store, RUN, 1.5, {"x": 1})) == json.dumps(expected)


def test_results_and_pending_units_stream_in_pages(store: RunStore) -> None:
    units = _fill(store, 7)
    rows = store.results(RUN)
    assert len(rows) > 3 * 3 and rows == sorted(rows, key=lambda r: (r.model, r.item_id, r.stage))
    assert list(store.iter_results(RUN, stage="judge:x")) == [r for r in rows if r.stage == "judge:x"]
    done = {(r.unit, r.status) for r in rows}
    for retry in (False, True):
        finished = {u for u, status in done if status != "infra_error" or not retry}
        pending = [u for u in store.planned_units(RUN) if u not in finished]
        assert store.pending_units(RUN, retry_infra_errors=retry) == pending
        answers_of_ab = [u for u in pending if u.stage == "answer" and u.model in ("a", "b")]
        assert (
            list(store.iter_pending_units(RUN, retry_infra_errors=retry, stage="answer", models=["a", "b"]))
            == answers_of_ab
        )
        counts = store.pending_counts(RUN, retry_infra_errors=retry, stage="answer")
        assert counts == {
            m: n for m in ("b", "a", "c") if (n := sum(u.model == m and u.stage == "answer" for u in pending))
        }
    assert store.planned_units(RUN) == [u for u in units if u.stage == "answer"] + [
        u for u in units if u.stage != "answer"
    ]


def test_plan_is_saved_in_chunks_in_order_without_gaps(store: RunStore) -> None:
    units = [Unit("m", f"i{k}") for k in range(10)]
    assert store.save_plan(RUN, iter(units[:7])) == 7
    assert store.save_plan(RUN, iter(units)) == 3  # already planned units are ignored and take no seq
    seqs = [row[0] for row in store._conn.execute("SELECT seq FROM plan WHERE run_id = ? ORDER BY seq", (RUN,))]
    assert seqs == list(range(10)) and store.planned_units(RUN) == units


def test_export_streams_the_same_lines(store: RunStore, tmp_path: Path) -> None:
    _fill(store, 3)
    expected = "".join(json.dumps(result_record(r), ensure_ascii=False) + "\n" for r in store.results(RUN))
    assert export_results_jsonl(tmp_path, RUN).read_text(encoding="utf-8") == expected


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10**6))
def test_the_export_pass_counts_what_the_index_and_the_cost_summary_would_count_again(
    tmp_path_factory: pytest.TempPathFactory, seed: int
) -> None:
    """The run reads results.jsonl's rows once, in the export: the costs it feeds equal a pass of their
    own over the store, and the index's cached-answer share read off summary.json equals the one
    counted from results.jsonl (retried infra errors, cache hits, judge stages, a failed model; a cache
    hit is always an answer, as the scheduler records one)."""
    from pool.config import parse_pool
    from pool.store.costs import CostTally
    from pool.store.export import write_summary
    from routing.nights.history import counted_cached_share, summary_cached_share

    config = parse_pool(
        "backends:\n  b:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n"
        "    price: {input_per_million: 1.5, output_per_million: 6}\nmodels:\n"
        "  - {name: a, backend: b, model: a}\n  - {name: b, backend: b, model: b}\n"
        "  - {name: c, backend: b, model: c}\njudge: {model: a}\n",
        "<test pool>",
    )
    run_dir = tmp_path_factory.mktemp("run")
    with RunStore(run_dir) as store:
        store.begin_run(RUN, pool_fingerprint="p", data_fingerprint="d", options={})
        _fill(store, seed, cached_infra_errors=False)
        own_pass = CostTally(config)
        for result in store.iter_results(RUN):
            own_pass.add(result)
    riding = CostTally(config)
    export_results_jsonl(run_dir, RUN, observe=riding.add)
    assert json.dumps(riding.summary()) == json.dumps(own_pass.summary())
    summary = write_summary(run_dir, 1.0, run_id=RUN)
    assert summary_cached_share(summary) == counted_cached_share(run_dir)


@given(st.text(max_size=20), st.text(max_size=40), st.text(max_size=30), st.floats(0, 2), st.integers(1, 99))
def test_cache_key_from_the_request_json_equals_hashing_the_whole_payload(
    backend_type: str, endpoint: str, content: str, temperature: float, max_tokens: int
) -> None:
    request = GenerationRequest(
        "m",
        messages=({"role": "user", "content": content},),
        params=GenerationParams(temperature=temperature, max_tokens=max_tokens, stop=("x",)),
    )
    payload = {
        "v": CACHE_KEY_VERSION,
        "backend_type": backend_type,
        "endpoint": normalize_endpoint(endpoint),
        "request": request_payload(request),
    }
    whole = hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()
    assert cache_key_of_json(backend_type, endpoint, canonical_json(request_payload(request))) == whole


def test_request_payload_params_are_not_shared_between_calls() -> None:
    messages = ({"role": "user", "content": "q"},)
    request = GenerationRequest("m", messages=messages, params=GenerationParams(stop=("a",)))
    first = request_payload(request)
    first["params"]["stop"].append("b")
    assert request_payload(request)["params"]["stop"] == ["a"]
    unhashable: Any = dataclasses.replace(GenerationParams(), stop=["a"])  # a list: built without the cache
    assert request_payload(GenerationRequest("m", messages=messages, params=unhashable))["params"]["stop"] == ["a"]
