"""A stand-in for the scheduler's write path, to be SIGKILLed by tests/pool/test_store.py.

Usage: ``python tests/store_crash_writer.py RUN_DIR CACHE_DIR [--delay S] [--batch-delay S]
[--retry-infra]``

It plans MODELS x ITEMS answer units, then for each pending unit: asks the response cache, else
"calls the model" (a deterministic fake, see :func:`expected_outcome`), puts the answer in the
cache and records the result — alternating single records and batches of 5 through
``record_many`` (chunk 0 singles, chunk 1 a batch, ...). ``--delay`` sleeps between single
records, ``--batch-delay`` between the rows *inside* a batch transaction, so that a kill can be
aimed mid-transaction: while a batch is open, rows are already in the cache but not yet recorded.
``--retry-infra`` resumes with infra errors retried; the fake server then always answers.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pool.execute.cache_key import cache_key, canonical_json, request_payload
from pool.execute.response_cache import ResponseCache
from pool.store.outcome import Result, Unit, result_from_response
from pool.store.run_store import RunStore
from pool.store.sqlite_db import utc_now_iso
from runners.base import (
    Attempt,
    GenerationParams,
    GenerationRequest,
    GenerationResponse,
)

RUN_ID = "crash-run"
MODELS = ("alpha", "beta", "gamma")
ITEMS = 200
BATCH = 5


def planned_units() -> list[Unit]:
    return [Unit(m, f"item-{i:04d}", "answer") for m in MODELS for i in range(ITEMS)]


def request_for(unit: Unit) -> GenerationRequest:
    return GenerationRequest(
        model=unit.model,
        messages=({"role": "user", "content": f"question {unit.item_id} — ¿dolor?"},),
        params=GenerationParams(max_tokens=64, seed=7),
    )


def expected_outcome(unit: Unit, retry_round: bool) -> GenerationResponse:
    """Item i: i%17==0 times out (unless retrying), i%13==0 answers empty, i%5==0 needs 2 tries."""
    i = int(unit.item_id.split("-")[1])
    if i % 17 == 0 and not retry_round:
        tries = tuple(Attempt(n, None, "timeout", 1.0, "read timeout") for n in (1, 2, 3))
        return GenerationResponse("", None, None, None, 3.0, tries, "timeout", "read timeout")
    text = "" if i % 13 == 0 else f"answer of {unit.model} to {unit.item_id}: ok ✓"
    n = 2 if i % 5 == 0 else 1
    tries = tuple(Attempt(k, 503 if k < n else 200, None, 0.1) for k in range(1, n + 1))
    return GenerationResponse(text, "stop", 10 + i, 5, 0.1 * n, tries, server_timing_s=0.05)


def make_result(unit: Unit, cache: ResponseCache, retry_round: bool, extra: dict) -> Result:
    request = request_for(unit)
    key = cache_key("fake", "http://fake.local/v1", request)
    started = utc_now_iso()
    response = cache.get(key)
    cached = response is not None
    if response is None:
        response = expected_outcome(unit, retry_round)
        cache.put(key, response)
    return result_from_response(
        RUN_ID,
        unit,
        response,
        request_json=canonical_json(request_payload(request)),
        cache_key=key,
        started_at=started,
        finished_at=utc_now_iso(),
        cached=cached,
        extra=extra,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("run_dir")
    ap.add_argument("cache_dir")
    ap.add_argument("--delay", type=float, default=0.0)
    ap.add_argument("--batch-delay", type=float, default=0.0)
    ap.add_argument("--retry-infra", action="store_true")
    args = ap.parse_args()
    store = RunStore(args.run_dir)
    cache = ResponseCache(args.cache_dir)
    store.begin_run(RUN_ID, pool_fingerprint="pool-1", data_fingerprint="data-1", options={"n": ITEMS})
    store.save_plan(RUN_ID, planned_units())
    pending = iter(store.pending_units(RUN_ID, retry_infra_errors=args.retry_infra))
    for n in itertools.count():
        chunk = list(itertools.islice(pending, BATCH))
        if not chunk:
            break
        batch_id = f"{os.getpid()}-{n}"
        if n % 2:  # one transaction for the whole chunk, sleeping inside it

            def rows(chunk: list[Unit] = chunk, batch_id: str = batch_id) -> Iterator[Result]:
                for unit in chunk:
                    extra = {"batch": batch_id, "batch_size": len(chunk)}
                    yield make_result(unit, cache, args.retry_infra, extra)
                    time.sleep(args.batch_delay)  # the row is inserted, not yet committed

            store.record_many(rows(), retry_infra_errors=args.retry_infra)
        else:
            for unit in chunk:
                time.sleep(args.delay)
                extra = {"batch": f"{batch_id}-{unit.model}-{unit.item_id}", "batch_size": 1}
                store.record(make_result(unit, cache, args.retry_infra, extra), retry_infra_errors=args.retry_infra)
    store.set_run_status(RUN_ID, "finished")
    store.close()
    cache.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
