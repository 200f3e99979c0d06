"""The scoring stage streams answers and spools judge-free rows; scores.jsonl and the tally stay what
sorting every row in memory gave: every answer once, sorted by (model, item_id), families counted
in that order, judged rows merged into their place."""

from __future__ import annotations

import asyncio
import json
import random
import tempfile
from collections import Counter
from pathlib import Path

import pytest

import pool.score.arrival as arrival_module
import pool.store.run_store as store_module
from eval.items import Item, Source
from pool.config import parse_pool
from pool.score.arrival import ArrivalRows, _IndexWriter, _Tail
from pool.score.stage import ScoringStage, _RowSpool
from pool.store.outcome import Unit, result_from_response
from pool.store.run_store import RunStore
from runners.base import Attempt, GenerationResponse

RUN = "run"
POOL = "backends:\n  b:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\nmodels:\n" + "".join(
    f"  - name: {m}\n    backend: b\n" for m in ("zeta", "alpha", "mid")
)


def _item(k: int) -> Item:
    source = Source("tests/pool/test_scoring_stream.py", k + 1)
    if k % 3 == 0:  # needs the judge; with no judge: block it is an unscorable row, spooled like the rest
        return Item(
            id=f"s/qa/{k:03d}",
            suite="s",
            track="capability",
            task="qa",
            gold_type="reference",
            gold="参考答案",
            source=source,
            question=f"问题 {k}",
        )
    return Item(
        id=f"s/mcq/{k:03d}",
        suite="s",
        track="exam",
        task="mcq",
        gold_type="single_choice",
        gold="B",
        source=source,
        question=f"选哪个 {k}",
        options=(("A", "甲"), ("B", "乙")),
    )


def test_rows_are_sorted_complete_and_counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "_CHUNK_ROWS", 4)
    items = {item.id: item for item in map(_item, range(14))}
    rng = random.Random(3)
    units = [Unit(m, i) for m in ("zeta", "alpha", "mid") for i in items]
    rng.shuffle(units)  # recorded in any order; the store reads them back sorted
    with RunStore(tmp_path) as store:
        store.begin_run(RUN, pool_fingerprint="p", data_fingerprint="d", options={})
        for unit in units:
            text = rng.choice(["答案：B", "答案：A", ""])
            response = GenerationResponse(text, "stop", 5, 2, 0.1, (Attempt(1, 200, None, 0.1),))
            store.record(
                result_from_response(
                    RUN, unit, response, request_json="{}", cache_key=None, started_at="t0", finished_at="t1"
                )
            )
        store.record(
            result_from_response(
                RUN,
                Unit("alpha", "s/gone/1"),
                response,
                request_json="{}",
                cache_key=None,
                started_at="t0",
                finished_at="t1",
            )
        )
        stage = ScoringStage(
            run_id=RUN, store=store, config=parse_pool(POOL, "<test pool>"), items=items, judges=(), session=None
        )
        asyncio.run(stage.run())
        rows = [json.loads(line) for line in stage.write(tmp_path).read_text(encoding="utf-8").splitlines()]
        tally = stage.tally()
    keys = [(r["model"], r["item_id"]) for r in rows]
    assert keys == sorted((u.model, u.item_id) for u in units)  # every answer once; the unplanned item is left out
    families: dict[str, Counter[str]] = {}
    for row in rows:
        families.setdefault(row["family"], Counter())[row["status"]] += 1
    assert tally["by_family"] == {f: dict(c) for f, c in families.items()}
    assert list(tally["by_family"]) == list(dict.fromkeys(r["family"] for r in rows))
    assert {r["status"] for r in rows if r["gold_type"] == "reference"} == {"unscorable"}


def test_judged_rows_are_merged_into_their_place(tmp_path: Path) -> None:
    spool = _RowSpool(tmp_path)
    row = {"family": "exam", "status": "scored", "answer_status": "ok", "details": {}, "judge": None}
    for model, item in (("a", "1"), ("a", "3"), ("b", "2")):
        spool.spool({**row, "model": model, "item_id": item, "text": "tab\there, newline\nhere \u2028"})
    spool.judged = [
        {**row, "model": m, "item_id": i, "status": "infra_error", "judge": {"k": 1}}
        for m, i in (("b", "1"), ("a", "2"), ("c", "0"))
    ]
    merged = list(spool.merged())
    assert [(meta[0], meta[1]) for meta, _ in merged] == [
        ("a", "1"),
        ("a", "2"),
        ("a", "3"),
        ("b", "1"),
        ("b", "2"),
        ("c", "0"),
    ]
    assert [meta[4] for meta, _ in merged] == [0, 1, 0, 1, 0, 1]  # judge infra errors on answered items
    assert json.loads(merged[0][1])["text"] == "tab\there, newline\nhere \u2028"
    assert list(spool.merged()) == merged  # the spool reads back the same a second time


def _record_all(store: RunStore, units: list[Unit], rng: random.Random, *, retry: bool = False) -> None:
    for unit in units:
        text = rng.choice(["答案：B", "答案：A", "", "B\n换行 \u2028 与\t制表"])
        error = "timeout" if rng.random() < 0.1 else None  # an infra error: never scored ahead
        response = GenerationResponse(
            text, "stop", 5, 2, rng.random(), (Attempt(1, 200, None, 0.1),), error_class=error
        )
        store.record(
            result_from_response(
                RUN, unit, response, request_json="{}", cache_key=None, started_at="t0", finished_at="t1"
            ),
            retry_infra_errors=retry,
        )


@pytest.mark.parametrize("collide", [False, True])
def test_rows_scored_ahead_equal_rows_scored_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collide: bool
) -> None:
    """The arrival worker's tail only moves work earlier: a run whose answers were scored as they were
    committed, a few at a time (a killed predecessor's answers, then this run's, then the infra
    errors asked again, replaced in place: the stage scores those), writes the bytes a scoring of the
    finished store writes, with the same tally; with every key in one slot too (collisions are scored
    again)."""
    if collide:
        monkeypatch.setattr(arrival_module, "_key", lambda model, item_id: 1)
    items = {item.id: item for item in map(_item, range(14))}
    rng = random.Random(5)
    units = [Unit(m, i) for m in ("zeta", "alpha", "mid") for i in items] + [Unit("alpha", "s/gone/1")]
    rng.shuffle(units)
    config = parse_pool(POOL, "<test pool>")
    outputs = []
    for name in ("ahead", "after"):
        folder = tmp_path / name
        folder.mkdir()
        with (
            RunStore(folder) as store,
            tempfile.TemporaryFile("w+b", dir=folder) as file,
            tempfile.TemporaryFile("w+b", dir=folder) as index_file,
        ):
            store.begin_run(RUN, pool_fingerprint="p", data_fingerprint="d", options={})
            stage = ScoringStage(run_id=RUN, store=store, config=config, items=items, judges=(), session=None)
            index = _IndexWriter(index_file.fileno(), len(units))
            tail = _Tail(stage, file, index)
            half = len(units) // 2
            _record_all(store, units[:half], random.Random(7))  # the killed predecessor's answers
            for k in range(half, len(units), 4):
                if name == "ahead":
                    tail.catch_up()
                _record_all(store, units[k : k + 4], random.Random(k))
            _record_all(store, units, random.Random(9), retry=True)  # infra errors asked again
            if name == "ahead":
                tail.catch_up()
                file.flush()
                arrivals = ArrivalRows(file, index_file, index.rows)
                assert index.rows > 20
                # every key in one slot: only the first row indexed names itself, the rest are scored again
                taken = sum(arrivals.take(u.model, u.item_id) is not None for u in units)
                assert taken == 1 if collide else taken == index.rows
                stage.arrivals = arrivals
            asyncio.run(stage.run())
            outputs.append((stage.write(folder).read_bytes(), stage.tally()))
    assert outputs[0] == outputs[1]
    assert outputs[0][0].count(b"\n") == len(items) * 3
