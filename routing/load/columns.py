"""One run's scores as columns: built from ``scores.jsonl`` in one pass, or read back from the
run's columnar copy ``RUN_DIR/scores.columns/`` that ``pool.run`` writes beside it.

``scores.jsonl`` repeats the model and judge identity in every row (~500 bytes a row); the columns
hold them once per run and reference them by number, so a nightly of 10^6 rows reads in about a
second instead of a JSON parse of half a gigabyte. ``scores.jsonl`` stays the full audit record (every
detail of every verdict); the columns hold what aggregation needs.

The folder (plain numpy, no other dependency; ``np.fromfile`` reads any column):

- ``meta.json`` — ``format``, ``version``, ``rows``, ``source`` (size and mtime of the
  ``scores.jsonl`` it was built from: a changed file makes the copy stale, and readers go back to the
  JSONL), ``vocab`` (item, suite, task, domain, broad_area, gold_type, family: the strings the code
  columns index; a row without ``broad_area`` has the empty string, derived when a table is built),
  ``identities`` (model identity objects), ``judges`` (judge objects, ``null`` first),
  ``columns`` (name → numpy dtype), ``metrics`` (sub-metric names) and ``nan_columns`` (float
  columns without a single value: readers take them as NaN without reading them). Written last: a
  folder without it is incomplete and ignored.
- ``<column>.bin`` — raw little-endian values, one per row, in table order (by entrant, then item id:
  :mod:`routing.load.order`; ``row_order: "table"``), so that loading a judged night needs no
  reordering pass; in ``scores.jsonl`` order (``row_order: "file"``, and every copy of version 3)
  when a (model, judge, item) key repeats, so the merge sees which row came last:
  ``ident``/``judge`` (indexes into identities/judges), the seven code columns, ``status`` (int8,
  :data:`routing.load.table.STATUSES`), ``value``/``passed``/``latency_s``/``completion_tokens``/``cost``
  (float64, NaN for null), ``answered`` (uint8), ``line`` (int32: the row's line in scores.jsonl),
  ``metric.<name>`` and ``flag.<name>`` (float64, NaN where absent).
- ``judged.<field>.bin`` — the judged rows as columns (:mod:`routing.load.verdicts`: the verdict
  details judge reliability audits, one value per judged row, a panel's member votes flat), their
  vocabularies in ``meta.json`` ``judged``.
- ``rows.jsonl`` — the few per-row values that are not numbers: ``{"row", "label"}`` for
  classification rows, ``{"row", "source"}`` for derived items, ``{"row", "rejudge"}`` for the
  sampled verdicts judged again.

Every row is checked as :func:`routing.load.runs.check_row` says before it becomes columns, so a copy
holds only rows the JSONL reader would accept; ``python -m routing.columns RUN_DIR`` (re)builds it
for a run folder written before the columns existed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
from array import array
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eval.items.scores import JudgeIdentity
from routing.load.labels import LabelBuilder, LabelColumns
from routing.load.order import table_order
from routing.load.rows import (
    FLAG_COLUMNS,
    NO_DOMAIN,
    SCORES_FILENAME,
    STATUS_CODE,
    IdentityInterner,
    LoadError,
    answered,
    flags_of,
    iter_checked_rows,
    label_of,
)
from routing.load.table import NOT_RECORDED, ModelIdentity
from routing.load.verdicts import DTYPES as JUDGED_DTYPES
from routing.load.verdicts import MEMBER_ARRAYS as JUDGED_MEMBER_ARRAYS
from routing.load.verdicts import JudgedBuilder, JudgedColumns, from_files

COLUMNS_DIRNAME = "scores.columns"
FORMAT, VERSION = "medpool-score-columns", 4  # a copy of another version is ignored: readers go back to scores.jsonl
READABLE_VERSIONS = (3, VERSION)  # version 3: the same files, rows always in file order
CODE_COLUMNS = ("item", "suite", "task", "domain", "broad_area", "gold_type", "family")
FLOAT_COLUMNS = ("value", "passed", "latency_s", "completion_tokens", "cost")
FIXED_DTYPES = {
    "ident": "<i4",
    "judge": "<i4",
    **dict.fromkeys(CODE_COLUMNS, "<i4"),
    "status": "i1",
    **dict.fromkeys(FLOAT_COLUMNS, "<f8"),
    "answered": "u1",
    "line": "<i4",
}
LAZY_COLUMNS = ("line",)
CHUNK_ROWS = 65_536  # rows built before a written copy appends them to its files
NARROW_SLICE_ROWS = 1 << 20  # rows of a float64 column checked at a time for an exact float32 copy


@dataclass
class RunColumns:
    """One run's rows as columns (file order); identities and strings once, rows as indexes."""

    identities: list[ModelIdentity]
    judges: list[JudgeIdentity | None]
    vocab: dict[str, list[str]]  # CODE_COLUMNS -> strings
    columns: dict[str, np.ndarray]  # FIXED_DTYPES columns
    metrics: dict[str, np.ndarray]
    flags: dict[str, np.ndarray]
    labels: LabelColumns = field(default_factory=LabelColumns.empty)
    sources: dict[int, str] = field(default_factory=dict)
    judged: JudgedColumns = field(default_factory=JudgedColumns.empty)  # row: the row in this run
    judge_records: list[dict[str, Any] | None] = field(default_factory=list)  # as read, for the judged rows

    def __len__(self) -> int:
        return int(self.columns["line"].shape[0])


@dataclass
class _Chunk:
    """Rows ``first`` .. ``first + len`` of a run as arrays; labels, sources and judged rows by index in the chunk."""

    first: int
    fixed: dict[str, np.ndarray]
    metrics: dict[str, np.ndarray]
    flags: dict[str, np.ndarray]
    labels: LabelColumns
    sources: dict[int, str]
    judged: JudgedColumns  # row: the row in the run


class _Builder:
    """Rows appended one at a time into compact arrays; :meth:`take` hands over a chunk."""

    def __init__(self) -> None:
        self.interner = IdentityInterner()
        self.judge_records: list[dict[str, Any] | None] = [None]
        self.strings: dict[str, dict[str, int]] = {name: {} for name in CODE_COLUMNS}
        self.rows = 0  # rows taken before the current chunk
        self.judged = JudgedBuilder()
        self.labels = LabelBuilder()  # its vocabulary kept from chunk to chunk
        self._reset()

    def _reset(self) -> None:
        self.fixed = {
            name: array("i" if dtype.endswith("i4") else "b" if dtype == "i1" else "B" if dtype == "u1" else "d")
            for name, dtype in FIXED_DTYPES.items()
        }
        self.metrics: dict[str, array[float]] = {}
        self.flags = {name: array("d") for name in FLAG_COLUMNS}
        self.sources: dict[int, str] = {}
        self.count = 0

    def _code(self, column: str, text: str) -> int:
        codes = self.strings[column]
        found = codes.get(text)
        if found is None:
            found = codes[text] = len(codes)
        return found

    def add(self, line_no: int, key: tuple[int, int, str], row: Mapping[str, Any]) -> None:
        f = self.fixed
        index = self.count
        f["ident"].append(key[0])
        f["judge"].append(key[1])
        if key[1] == len(self.judge_records):
            self.judge_records.append(row["judge"])
        f["item"].append(self._code("item", row["item_id"]))
        f["suite"].append(self._code("suite", str(row.get("suite") or "")))
        f["task"].append(self._code("task", row["task"]))
        f["domain"].append(self._code("domain", row.get("domain") or NO_DOMAIN))
        f["broad_area"].append(self._code("broad_area", row.get("broad_area") or NOT_RECORDED))
        f["gold_type"].append(self._code("gold_type", row["gold_type"]))
        f["family"].append(self._code("family", row["family"]))
        f["status"].append(STATUS_CODE[row["status"]])
        for name in FLOAT_COLUMNS:
            value = row.get(name)
            f[name].append(math.nan if value is None else float(value))
        f["answered"].append(answered(row))
        f["line"].append(line_no)
        for name, value in (row.get("metrics") or {}).items():
            column = self.metrics.get(name)
            if column is None:
                column = self.metrics[name] = array("d", [math.nan]) * index
            column.append(math.nan if value is None else float(value))
        for column in self.metrics.values():
            if len(column) == index:
                column.append(math.nan)
        details = row.get("details") or {}
        for name, value in zip(
            FLAG_COLUMNS, flags_of(details) if details else (math.nan,) * len(FLAG_COLUMNS), strict=True
        ):
            self.flags[name].append(value)
        label = label_of(row)
        if label is not None:
            self.labels.add(index, label)
        if isinstance(row.get("source_item_id"), str):
            self.sources[index] = row["source_item_id"]
        if row.get("judge") is not None:
            self.judged.add(self.rows + index, key[1], row)
        self.count += 1

    def take(self) -> _Chunk:
        """The rows added since the last take, as arrays; the builder starts a new chunk."""
        fixed = {
            name: np.frombuffer(self.fixed[name], dtype=FIXED_DTYPES[name].replace("<", "=")).copy()
            if self.count
            else np.zeros(0, dtype=FIXED_DTYPES[name])
            for name in FIXED_DTYPES
        }
        metrics = {name: np.frombuffer(col, dtype=float).copy() for name, col in self.metrics.items()}
        flags = {
            name: np.frombuffer(col, dtype=float).copy() if self.count else np.zeros(0)
            for name, col in self.flags.items()
        }
        judged = self.judged.take(self.judge_records)
        chunk = _Chunk(self.rows, fixed, metrics, flags, self.labels.take(), self.sources, judged)
        self.rows += self.count
        self._reset()
        return chunk

    def vocab(self) -> dict[str, list[str]]:
        return {name: list(codes) for name, codes in self.strings.items()}


def build_from_jsonl(run_dir: Path) -> RunColumns:
    """Every row of ``RUN_DIR/scores.jsonl``, checked, as :class:`RunColumns` (one pass, one line at a time)."""
    builder = _Builder()
    for line_no, key, row in iter_checked_rows(run_dir, builder.interner):
        builder.add(line_no, key, row)
    chunk = builder.take()
    return RunColumns(
        identities=list(builder.interner.identities),
        judges=list(builder.interner.judges),
        vocab=builder.vocab(),
        columns=chunk.fixed,
        metrics=chunk.metrics,
        flags=chunk.flags,
        labels=chunk.labels,
        sources=chunk.sources,
        judged=chunk.judged,
        judge_records=builder.judge_records,
    )


# --- the columnar copy ----------------------------------------------------------------------------


def _source_stamp(path: Path) -> dict[str, int]:
    stat = path.stat()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def write_columns(run_dir: Path | str) -> Path:
    """Build ``RUN_DIR/scores.columns/`` from ``RUN_DIR/scores.jsonl`` in one streaming pass.

    Memory stays bounded by :data:`CHUNK_ROWS` rows (plus the vocabularies): each chunk is appended
    to the column files. The folder is built under a temporary name and renamed into place, with
    ``meta.json`` written last, so a reader never takes a half-written copy. Raises
    :class:`~routing.load.rows.LoadError` for a bad row (nothing is left behind).
    """
    run_dir = Path(run_dir)
    source = run_dir / SCORES_FILENAME
    if not source.is_file():
        raise LoadError(f"{source}: not found; pass a run folder pool.run wrote (it holds {SCORES_FILENAME})")
    stamp_before = _source_stamp(source) if source.is_file() else None
    target = run_dir / COLUMNS_DIRNAME
    building = run_dir / f".{COLUMNS_DIRNAME}.building"
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir()
    try:
        rows = _write_chunks(run_dir, building)
        rows["row_order"] = "table" if _store_in_table_order(building, rows) else "file"
        meta = rows | {
            "format": FORMAT,
            "version": VERSION,
            "source": {"file": SCORES_FILENAME, **(stamp_before or {})},
        }
        with (building / "meta.json").open("w", encoding="utf-8") as f:
            json.dump(meta, f, ensure_ascii=False)
            f.flush()
            os.fsync(f.fileno())
        shutil.rmtree(target, ignore_errors=True)
        os.replace(building, target)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    return target


def _write_chunks(run_dir: Path, folder: Path) -> dict[str, Any]:
    builder = _Builder()
    files: dict[str, Any] = {}
    written_metrics: set[str] = set()
    known: set[str] = set()  # float columns with at least one value (the others are NaN throughout)

    def note(name: str, column: np.ndarray) -> np.ndarray:
        if column.dtype.kind == "f" and name not in known and not np.isnan(column).all():
            known.add(name)
        return column

    extras = (folder / "rows.jsonl").open("w", encoding="utf-8")
    judged_count = {"rows": 0, "member_votes": 0}

    def flush() -> None:
        chunk = builder.take()
        fixed, metrics, flags, first = chunk.fixed, chunk.metrics, chunk.flags, chunk.first
        count = len(fixed["line"])
        for name, column in [*fixed.items(), *((f"flag.{k}", v) for k, v in flags.items())]:
            _append(files, folder, name, note(name, column).astype(FIXED_DTYPES.get(name, "<f8"), copy=False))
        for name in written_metrics | set(metrics):
            if name not in written_metrics:  # a sub-metric first seen in this chunk: NaN for every earlier row
                _append(files, folder, f"metric.{name}", np.full(first, np.nan, dtype="<f8"))
                written_metrics.add(name)
            column = note(f"metric.{name}", metrics.get(name, np.full(count, np.nan)))
            _append(files, folder, f"metric.{name}", column.astype("<f8", copy=False))
        for row, label in chunk.labels.items():
            extras.write(
                json.dumps({"row": first + row, "label": [label[0], label[1], list(label[2])]}, ensure_ascii=False)
                + "\n"
            )
        for row, source in chunk.sources.items():
            extras.write(json.dumps({"row": first + row, "source": source}, ensure_ascii=False) + "\n")
        judged = chunk.judged  # every flush writes the judged files, so a run without judged rows has them empty
        judged_count["rows"] += len(judged)
        judged_count["member_votes"] += len(judged.member_name)
        for name, dtype in JUDGED_DTYPES.items():
            _append(files, folder, f"judged.{name}", getattr(judged, name).astype(dtype, copy=False))
        for row, record in judged.rejudge.items():
            extras.write(json.dumps({"row": row, "rejudge": record}, ensure_ascii=False) + "\n")

    try:
        for line_no, key, row in iter_checked_rows(run_dir, builder.interner):
            builder.add(line_no, key, row)
            if builder.count >= CHUNK_ROWS:
                flush()
        flush()
    finally:
        for handle in files.values():
            handle.close()
        extras.close()
    floats = [*FLOAT_COLUMNS, *(f"flag.{k}" for k in FLAG_COLUMNS), *(f"metric.{k}" for k in sorted(written_metrics))]
    return {
        "rows": builder.rows,
        "vocab": builder.vocab(),
        "nan_columns": [name for name in floats if name not in known],
        "identities": [identity.as_dict() for identity in builder.interner.identities],
        "judges": builder.judge_records,
        "columns": {
            **FIXED_DTYPES,
            **{f"flag.{k}": "<f8" for k in FLAG_COLUMNS},
            **{f"metric.{k}": "<f8" for k in sorted(written_metrics)},
        },
        "metrics": sorted(written_metrics),
        "judged": builder.judged.take(builder.judge_records).vocab_json() | judged_count,
    }


def _store_in_table_order(folder: Path, meta: dict[str, Any]) -> bool:
    """Rewrite the written copy's rows in table order (:mod:`routing.load.order`), one column file at
    a time; judged rows keep their order, their ``row`` (and the row numbers in ``rows.jsonl``) renumbered.
    False when a key repeats: the rows then stay in file order."""
    n = int(meta["rows"])
    codes = {name: np.fromfile(folder / f"{name}.bin", dtype=FIXED_DTYPES[name]) for name in ("ident", "judge", "item")}
    order, unique = table_order(
        codes["ident"],
        codes["judge"],
        codes["item"],
        *_identities_of(meta),
        meta["vocab"]["item"],
    )
    del codes
    if order is None:
        return unique
    for name, dtype in meta["columns"].items():
        if name not in meta["nan_columns"]:  # NaN throughout: the same in any order
            path = folder / f"{name}.bin"
            np.fromfile(path, dtype=dtype)[order].tofile(path)
    table_row = np.empty(n, dtype=np.int64)
    table_row[order] = np.arange(n, dtype=np.int64)
    del order
    path = folder / "judged.row.bin"
    dtype = JUDGED_DTYPES["row"]
    table_row[np.fromfile(path, dtype=dtype)].astype(dtype).tofile(path)
    extras, renumbered = folder / "rows.jsonl", folder / "rows.jsonl.renumbered"
    with extras.open(encoding="utf-8") as old, renumbered.open("w", encoding="utf-8") as new:
        for line in old:  # in their written order: the order readers meet them in either way
            entry = json.loads(line)
            entry["row"] = int(table_row[entry["row"]])
            new.write(json.dumps(entry, ensure_ascii=False) + "\n")
    os.replace(renumbered, extras)
    return True


def _append(files: dict[str, Any], folder: Path, name: str, column: np.ndarray) -> None:
    handle = files.get(name)
    if handle is None:
        handle = files[name] = (folder / f"{name}.bin").open("wb")
    handle.write(np.ascontiguousarray(column).tobytes())


def read_columns(run_dir: Path | str, only: Iterable[str] | None = None) -> RunColumns | None:
    """The run's columnar copy, or None when it has none or it is stale (``scores.jsonl`` changed
    since, or a file is short): the caller then reads ``scores.jsonl``. A copy that is there and
    current but does not hold together raises :class:`LoadError` naming the file.

    ``only``: read just these of the fixed columns (others are left empty), no sub-metrics, flags or
    per-row extras — for a reader that needs a few columns of a large run."""
    run_dir = Path(run_dir)
    folder = run_dir / COLUMNS_DIRNAME
    meta_path = folder / "meta.json"
    source = run_dir / SCORES_FILENAME
    if not meta_path.is_file():
        return None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("version") not in READABLE_VERSIONS:
        return None
    stamp = meta.get("source") or {}
    if source.is_file() and {k: stamp.get(k) for k in ("size", "mtime_ns")} != _source_stamp(source):
        return None  # scores.jsonl was rewritten (a re-score, an edit): it is the record
    n = int(meta["rows"])
    wanted = set(meta["columns"]) if only is None else set(only)
    blank = set(meta.get("nan_columns", ()))
    columns: dict[str, np.ndarray] = {name: np.zeros(0, dtype=dtype) for name, dtype in meta["columns"].items()}
    for name, dtype in meta["columns"].items():
        if name not in wanted:
            continue
        path = folder / f"{name}.bin"
        if not path.is_file() or path.stat().st_size != n * np.dtype(dtype).itemsize:
            return None
        # a column with no value at all (no prices, no claim checks) costs no memory: one read-only NaN
        if name in blank:
            columns[name] = np.broadcast_to(np.nan, n)
        elif name in LAZY_COLUMNS:  # mapped, so it costs memory only when a duplicate row must be named
            columns[name] = np.memmap(path, dtype=dtype, mode="r", shape=(n,)) if n else np.zeros(0, dtype=dtype)
        else:
            columns[name] = (
                _read_narrowed(path, n) if name.startswith(("metric.", "flag.")) else np.fromfile(path, dtype=dtype)
            )
    vocab = {name: list(meta["vocab"][name]) for name in CODE_COLUMNS}
    for name in CODE_COLUMNS:
        if n and name in wanted and (columns[name].min() < 0 or columns[name].max() >= len(vocab[name])):
            raise LoadError(
                f"{folder / (name + '.bin')}: a code outside its vocabulary; "
                f"rebuild with python -m routing.columns {run_dir}"
            )
    identities, judges = _identities_of(meta)
    if (
        n
        and {"ident", "judge"} <= wanted
        and (columns["ident"].max() >= len(identities) or columns["judge"].max() >= len(judges))
    ):
        raise LoadError(
            f"{folder}: an identity index outside meta.json; rebuild with python -m routing.columns {run_dir}"
        )
    out = RunColumns(
        identities=identities,
        judges=judges,
        vocab=vocab,
        columns={
            name: columns[name].astype(dtype.replace("<", "="), copy=False) for name, dtype in FIXED_DTYPES.items()
        },
        metrics={name: columns[f"metric.{name}"] for name in meta["metrics"]},
        flags={name: columns.get(f"flag.{name}", np.broadcast_to(np.nan, n)) for name in FLAG_COLUMNS},
        judge_records=list(meta["judges"]),
    )
    if only is None:
        judged = _read_judged(folder, meta.get("judged") or {}, out.judge_records)
        if judged is None:
            return None
        out.judged = judged
        _read_extras(folder / "rows.jsonl", out)
    return out


def _read_narrowed(path: Path, n: int) -> np.ndarray:
    """A float64 sub-metric or flag column as float32 when every value is one exactly (judge
    dimensions, counts, 0/1 flags: the table keeps those narrow, see ``routing.load.runs``), else as
    float64; read a slice at a time, so the whole float64 column never sits beside its narrow copy."""
    mapped = np.memmap(path, dtype="<f8", mode="r", shape=(n,)) if n else np.zeros(0)
    narrow = np.empty(n, dtype=np.float32)
    for start in range(0, n, NARROW_SLICE_ROWS):
        part = mapped[start : start + NARROW_SLICE_ROWS]
        narrow[start : start + len(part)] = part
        if not np.array_equal(narrow[start : start + len(part)].astype(np.float64), part, equal_nan=True):
            return np.fromfile(path, dtype="<f8")
    return narrow


def _read_judged(folder: Path, meta: dict[str, Any], judge_records: list[Any]) -> JudgedColumns | None:
    """The judged columns (:mod:`routing.load.verdicts`), None when a file is missing or short."""
    arrays = {}
    for name, dtype in JUDGED_DTYPES.items():
        path = folder / f"judged.{name}.bin"
        count = int(meta.get("member_votes" if name in JUDGED_MEMBER_ARRAYS else "rows", 0))
        if not path.is_file() or path.stat().st_size != count * np.dtype(dtype).itemsize:
            return None
        arrays[name] = np.fromfile(path, dtype=dtype)
    return from_files(meta, arrays, judge_records)


def _identities_of(meta: Mapping[str, Any]) -> tuple[list[ModelIdentity], list[JudgeIdentity | None]]:
    """The model and judge identities a copy's ``meta.json`` records (``null`` for judge-free rows)."""
    return (
        [ModelIdentity.from_record({k: _frozen(v) for k, v in record.items()}) for record in meta["identities"]],
        [None if record is None else JudgeIdentity.from_record(record) for record in meta["judges"]],
    )


def _frozen(value: Any) -> Any:
    return tuple(_frozen(v) for v in value) if isinstance(value, list) else value


def _read_extras(path: Path, out: RunColumns) -> None:
    if not path.is_file():
        return
    labels = LabelBuilder()
    with path.open(encoding="utf-8") as f:
        for line in f:
            entry = json.loads(line)
            row = int(entry["row"])
            if "label" in entry:
                predicted, gold, declared = entry["label"]
                labels.add(row, (predicted, gold, tuple(declared)))
            elif "source" in entry:
                out.sources[row] = entry["source"]
            elif "rejudge" in entry:
                out.judged.rejudge[row] = entry["rejudge"]
    out.labels = labels.take()


def run_columns(run_dir: Path | str) -> RunColumns:
    """The run's columns: its columnar copy when current, otherwise ``scores.jsonl`` read and checked."""
    return read_columns(run_dir) or build_from_jsonl(Path(run_dir))


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m routing.columns",
        description="Write the columnar copy (scores.columns/) of each run folder's scores.jsonl.",
    )
    parser.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="run folders holding scores.jsonl")
    args = parser.parse_args(list(argv) if argv is not None else None)
    for run_dir in map(Path, args.run_dirs):
        try:
            target = write_columns(run_dir)
        except (LoadError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2 if isinstance(exc, LoadError) else 1
        print(f"wrote {target}")
    return 0
