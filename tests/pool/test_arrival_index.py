"""The arrival worker's index of the rows it scored (``pool.score.arrival``): a hash table on disk, so
neither the worker nor the driver holds anything per row, however many answers a run has. Every row
the worker indexed is found again as the bytes it wrote; a row it could not index (a full table)
or never scored is not found, and the scoring stage scores it itself."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import pytest

import pool.score.arrival as arrival
from pool.score.arrival import ArrivalRows, _IndexWriter, _key


def _entry(model: str, item_id: str) -> bytes:
    """A spool entry as the stage writes one: ``meta TAB row`` (see pool.score.stage._spool_entry)."""
    meta = json.dumps([model, item_id, "exam", "scored", 0], ensure_ascii=False)
    return (meta + "\t" + json.dumps({"model": model, "item_id": item_id}, ensure_ascii=False) + "\n").encode("utf-8")


def _write(rows: BinaryIO, writer: _IndexWriter, keys: list[tuple[str, str]]) -> None:
    """What the worker's tail does with a batch: append the rows, flush, then index their places."""
    places = []
    for model, item_id in keys:
        data = _entry(model, item_id)
        places.append((model, item_id, rows.tell(), len(data)))
        rows.write(data)
    rows.flush()
    for place in places:
        writer.put(*place)


@pytest.fixture
def files(tmp_path: Path) -> Iterator[tuple[BinaryIO, BinaryIO]]:
    with tempfile.TemporaryFile("w+b", dir=tmp_path) as rows, tempfile.TemporaryFile("w+b", dir=tmp_path) as index:
        yield rows, index


def test_the_key_is_the_same_in_every_process() -> None:
    """The worker writes the index and the driver reads it: ``hash()`` of a string differs between them."""
    assert _key("alpha", "mcq00") == 15766947494458776233
    assert _key("m", "é/1") == 16426269674090050422
    script = "from pool.score.arrival import _key; print(_key('alpha', 'mcq00'))"
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "123"},
        cwd=Path(__file__).resolve().parents[2],
    )
    assert int(out.stdout) == _key("alpha", "mcq00")


def test_every_indexed_row_is_found_as_written(files: tuple[BinaryIO, BinaryIO]) -> None:
    rows, index = files
    keys = [(f"m{m}", f"suite/q{i:04d}") for m in range(3) for i in range(400)]
    writer = _IndexWriter(index.fileno(), len(keys))
    for start in range(0, len(keys), 37):  # batches, as they arrive
        _write(rows, writer, keys[start : start + 37])
    found = ArrivalRows(rows, index, writer.rows)
    assert len(found) == len(keys)
    for model, item_id in reversed(keys):  # in any order
        assert found.take(model, item_id) == _entry(model, item_id).decode("utf-8")
    assert found.take("m0", "suite/q9999") is None and found.take("m9", "suite/q0000") is None


def test_a_full_table_leaves_the_rest_to_the_stage(
    files: tuple[BinaryIO, BinaryIO], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slots for fewer rows than arrive (a plan that is not the store's): the worker stops indexing at
    three quarters full; what it indexed is found (probes wrap past the table's end), the rest is not."""
    rows, index = files
    keys = [("m", f"q{i}") for i in range(40)]
    writer = _IndexWriter(index.fileno(), 4)  # 8 slots
    assert writer.slots == 8
    _write(rows, writer, keys)
    assert writer.rows == 6
    found = ArrivalRows(rows, index, writer.rows)
    taken = [key for key in keys if found.take(*key) is not None]
    assert taken == keys[:6]


def test_colliding_keys_are_told_apart_by_the_row(
    files: tuple[BinaryIO, BinaryIO], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two rows under one key: the first is found, the second names another row and is scored again."""
    monkeypatch.setattr(arrival, "_key", lambda model, item_id: 7)
    rows, index = files
    writer = _IndexWriter(index.fileno(), 10)
    _write(rows, writer, [("a", "1"), ("b", "2")])
    found = ArrivalRows(rows, index, writer.rows)
    assert found.take("a", "1") is not None and found.take("b", "2") is None


def test_an_index_the_worker_never_wrote_finds_nothing(files: tuple[BinaryIO, BinaryIO]) -> None:
    rows, index = files
    assert ArrivalRows(rows, index).take("a", "1") is None
    index.write(b"not an index at all")
    index.flush()
    assert ArrivalRows(rows, index).take("a", "1") is None


def _held_after_reading(tmp_path: Path, n_rows: int) -> int:
    """Bytes the reader's side still holds (traced allocations alive) once ``n_rows`` rows were indexed
    and every one taken back."""
    with tempfile.TemporaryFile("w+b", dir=tmp_path) as rows, tempfile.TemporaryFile("w+b", dir=tmp_path) as index:
        writer = _IndexWriter(index.fileno(), n_rows)
        _write(rows, writer, [("model", f"item{i:06d}") for i in range(n_rows)])
        gc.collect()
        tracemalloc.start()
        try:
            found = ArrivalRows(rows, index, writer.rows)
            assert sum(found.take("model", f"item{i:06d}") is not None for i in range(n_rows)) == n_rows
            gc.collect()
            return tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()


def test_the_driver_holds_nothing_per_row(tmp_path: Path) -> None:
    """The driver's side keeps nothing per row it read the place of: with a hundred times the rows it
    holds the same few objects (a dict of the places held ~100 bytes a row, half a megabyte here)."""
    few, many = _held_after_reading(tmp_path, 50), _held_after_reading(tmp_path, 5_000)
    assert many - few < 4_096
