"""Read run directories into a :class:`~routing.load.table.ScoreTable` — the only file reading in aggregation.

Per run directory: ``summary.json`` (run_id, created_at, pool and data fingerprints, per-model
answer counts; see ``pool.store.export``) and ``scores.jsonl`` (one row per (model, item); see
``eval.items.scores``). A missing or broken file raises :class:`LoadError` naming ``path:line: field``.

Merging several runs: rows are keyed by (model identity, judge identity, item). Two rows with the
same key in one file are an error; across runs the row of the later run (by ``created_at``) wins,
except that an ``infra_error`` never replaces a real result. Rows differing in model or judge
identity are different keys, so they are never merged.

Identities are compared field by field, whole: ``model_identity`` is every field the row carries
(name, backend, backend_type, endpoint, model id, temperature, max_tokens, stop, top_p, seed, mode,
think, gguf, chat_format, ...), and the judge is :class:`~eval.items.scores.JudgeIdentity` (pool name,
backend, prompt version and the ``identity`` object's other fields; its stored ``key`` is derived,
never trusted). A row written before a field existed simply lacks it, and its identity is what it
carries — so it is kept apart from a newer row that names the field. :attr:`Loaded.kept_apart`
lists every model name and every judge (per family) that stands for more than one identity, with
the fields that tell them apart and the runs each came from.

Each run is read as columns (:mod:`routing.load.columns`): from its columnar copy
``scores.columns/`` when that is current, otherwise from ``scores.jsonl``, checked row by row
(:mod:`routing.load.rows`). Merging and ordering are array operations over those columns.

``source_item_id`` (rows of derived items, e.g. decision recognition) becomes
:attr:`ScoreTable.sources`, so a derived task can be shown beside its source task.

What each row means — ``answered``, the specialty audit columns read from ``details``
(safety floor, claim counts, grounding) — is in :mod:`routing.load.rows`, which checks every row.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from eval.items.scores import JudgeIdentity
from routing.load.columns import CODE_COLUMNS, RunColumns, read_columns, run_columns
from routing.load.labels import LabelColumns
from routing.load.order import item_ranks, judge_key, ordered_entrants
from routing.load.rows import (
    FLAG_COLUMNS,
    INFRA_CODE,
    SCORES_FILENAME,
    IdentityInterner,
    LoadError,
    check_row,
    iter_checked_rows,
)
from routing.load.table import (
    SCORED,
    STATUSES,
    Entrant,
    ModelIdentity,
    ScoreTable,
    broad_area_column,
    codes_in_use,
    make_entrants,
)
from routing.load.verdicts import JudgedColumns

__all__ = [
    "FLAG_COLUMNS",
    "SCORES_FILENAME",
    "SUMMARY_FILENAME",
    "LoadError",
    "Loaded",
    "RunInfo",
    "ScoreDigest",
    "check_row",
    "digest_scores",
    "kept_apart",
    "load_runs",
    "parse_time",
    "read_summary",
]

SUMMARY_FILENAME = "summary.json"
SORTED_CHECK_ROWS = 1 << 20


@dataclass(frozen=True)
class RunInfo:
    dir: str
    run_id: str
    created_at: str
    pool_fingerprint: str | None
    data_fingerprint: str | None
    models: Mapping[str, Any]  # summary.json "models": per-model answer tallies (status counts, ...)
    wall_time_s: float | None


@dataclass(frozen=True)
class Loaded:
    table: ScoreTable
    runs: tuple[RunInfo, ...]
    skipped_runs: tuple[str, ...]  # directories left out by --since
    superseded: int  # rows replaced by a later run's row for the same key
    kept_apart: tuple[dict[str, Any], ...] = ()  # see kept_apart(): same name, different identities
    # The judged rows as columns (routing.load.verdicts; ``row`` indexes the table), merged as the table is,
    # in the order their keys first appear in the runs.
    judged: JudgedColumns = field(default_factory=JudgedColumns.empty)


def parse_time(text: str, where: str) -> datetime:
    """An ISO-8601 timestamp as an aware UTC datetime (a naive one is taken as UTC)."""
    try:
        moment = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise LoadError(f"{where}: not an ISO-8601 time: {text!r} (e.g. 2026-11-29T12:00:00Z)") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def read_summary(run_dir: Path) -> RunInfo:
    path = run_dir / SUMMARY_FILENAME
    if not path.is_file():
        raise LoadError(
            f"{path}: not found; pass a run directory written by pool.run "
            f"(it holds {SUMMARY_FILENAME} and {SCORES_FILENAME})"
        )
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise LoadError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    if not isinstance(summary, dict):
        raise LoadError(f"{path}:1: expected a JSON object, got {type(summary).__name__}")
    for key in ("run_id", "created_at"):
        if not isinstance(summary.get(key), str):
            raise LoadError(f"{path}: field {key!r} must be a string")
    parse_time(summary["created_at"], f"{path}: field 'created_at'")
    models = summary.get("models") if isinstance(summary.get("models"), dict) else {}
    wall = summary.get("wall_time_s")
    return RunInfo(
        dir=str(run_dir),
        run_id=summary["run_id"],
        created_at=summary["created_at"],
        pool_fingerprint=summary.get("pool_fingerprint"),
        data_fingerprint=summary.get("data_fingerprint"),
        models=models,
        wall_time_s=float(wall) if isinstance(wall, (int, float)) else None,
    )


@dataclass(frozen=True)
class ScoreDigest:
    """One run's scored values per (entrant, family), read in one pass without building a table:
    memory grows with the scored values (8 bytes each), not with the rows' text."""

    entrants: tuple[Entrant, ...]
    values: Mapping[tuple[int, str], np.ndarray]  # (entrant index, family) -> values of its scored rows
    judges_by_family: Mapping[str, tuple[str, ...]]  # family -> judge keys of its rows (any status), sorted


def digest_scores(run_dir: Path | str) -> ScoreDigest:
    """A :class:`ScoreDigest` of the run's scores: a few columns of its columnar copy when current,
    else ``scores.jsonl`` in one streaming pass; raises :class:`LoadError` as :func:`load_runs` does
    (bad row, the same (model, judge, item) twice, no row at all)."""
    run_dir = Path(run_dir)
    cols = read_columns(run_dir, only=("ident", "judge", "item", "family", "status", "value", "line"))
    if cols is not None:
        return _digest_columns(run_dir, cols)
    interner = IdentityInterner()
    values: dict[tuple[int, int, str], array[float]] = {}
    judges: dict[str, set[int]] = {}
    seen: dict[int, int] = {}  # hash of the row key -> line (a set of ints, not of key tuples)
    for line_no, key, row in iter_checked_rows(run_dir, interner):
        first = seen.setdefault(hash(key), line_no)
        if first != line_no:
            raise interner.duplicate_row(run_dir / SCORES_FILENAME, line_no, key, first)
        family = interner.text(row["family"])
        judges.setdefault(family, set()).add(key[1])
        column = values.setdefault((key[0], key[1], family), array("d"))
        if row["status"] == STATUSES[SCORED]:
            column.append(float(row["value"]))
    if not seen:
        raise LoadError(f"no score rows in {run_dir / SCORES_FILENAME}")
    pairs = sorted({(i, j) for i, j, _ in values}, key=interner.entrant_order())
    judge_keys = {i: judge.key() for i, judge in enumerate(interner.judges) if judge is not None}
    entrants = make_entrants([(interner.identities[i], interner.judges[j]) for i, j in pairs])
    index = {pair: e for e, pair in enumerate(pairs)}
    return ScoreDigest(
        entrants=tuple(entrants),
        values={
            (index[(i, j)], family): np.frombuffer(column, dtype=float) for (i, j, family), column in values.items()
        },
        judges_by_family={
            family: tuple(sorted(judge_keys[j] for j in ids if j)) for family, ids in sorted(judges.items())
        },
    )


def _digest_columns(run_dir: Path, cols: RunColumns) -> ScoreDigest:
    """:func:`digest_scores` from a run's columns (values per group in file order, as the stream)."""
    c = cols.columns
    if not len(c["line"]):
        raise LoadError(f"no score rows in {run_dir / SCORES_FILENAME}")
    n_judges, n_items = len(cols.judges), len(cols.vocab["item"])
    _check_duplicates(
        run_dir,
        (c["ident"].astype(np.int64) * n_judges + c["judge"]) * n_items + c["item"],
        c["line"],
        lambda r: (cols.identities[c["ident"][r]].name, cols.vocab["item"][c["item"][r]]),
    )
    pair = c["ident"].astype(np.int64) * n_judges + c["judge"]
    entrants, index = ordered_entrants(np.unique(pair), cols.identities, cols.judges, n_judges)
    families = cols.vocab["family"]
    group = pair * len(families) + c["family"]
    order = np.lexsort((c["line"], group))  # file order within a group, whatever order the copy keeps
    starts = np.concatenate([[0], np.flatnonzero(np.diff(group[order])) + 1])
    values: dict[tuple[int, str], np.ndarray] = {}
    judges: dict[str, set[str]] = {}
    for rows in np.split(order, starts[1:]):
        p, family = int(pair[rows[0]]), families[int(c["family"][rows[0]])]
        values[(int(index[p]), family)] = c["value"][rows][c["status"][rows] == SCORED]
        judges.setdefault(family, set()).add(judge_key(cols.judges[p % n_judges]))
    return ScoreDigest(
        entrants=tuple(entrants),
        values=values,
        judges_by_family={f: tuple(sorted(k for k in keys if k)) for f, keys in sorted(judges.items())},
    )


# --- merging runs ---------------------------------------------------------------------------------


class _Vocab:
    """Global codes for strings (or identities) met in several runs."""

    def __init__(self) -> None:
        self.index: dict[Any, int] = {}
        self.values: list[Any] = []

    def codes(self, values: Sequence[Any]) -> np.ndarray:
        out = np.empty(len(values), dtype=np.int64)
        for i, value in enumerate(values):
            found = self.index.get(value)
            if found is None:
                found = self.index[value] = len(self.values)
                self.values.append(value)
            out[i] = found
        return out


def _check_duplicates(run_dir: Path, key: np.ndarray, lines: np.ndarray, describe: Any) -> None:
    """A run holds one row per (model identity, judge, item): else the error names both lines."""
    order = np.argsort(key, kind="stable")
    repeated = np.flatnonzero(key[order][1:] == key[order][:-1]) + 1
    if not len(repeated):
        return
    starts = np.concatenate([[0], np.flatnonzero(np.diff(key[order])) + 1])
    group_start = starts[np.searchsorted(starts, repeated, side="right") - 1]
    worst = int(np.argmin(lines[order[repeated]]))
    row, first = int(order[repeated[worst]]), int(order[group_start[worst]])
    name, item = describe(row)
    raise LoadError(
        f"{run_dir / SCORES_FILENAME}:{int(lines[row])}: duplicate row for model {name!r}, item {item!r} "
        f"and the same judge (first at line {int(lines[first])})"
    )


def merge_columns(per_run: Sequence[tuple[Path, RunColumns]]) -> tuple[ScoreTable, int, JudgedColumns]:
    """(table, superseded rows, judged rows) of runs given oldest first.

    A later run's row replaces an earlier one with the same (model identity, judge, item), except
    that an ``infra_error`` never replaces a real result. Table rows are ordered by model name,
    identity key, judge key (judge-free first), then item id.
    """
    if len(per_run) == 1:
        fast = _merge_sorted_run(per_run[0][1])
        if fast is not None:
            return fast
    identities, judges = _Vocab(), _Vocab()
    judges.codes([None])
    vocabs = {name: _Vocab() for name in CODE_COLUMNS}
    judge_records: dict[int, Any] = {}
    mapped: list[dict[str, np.ndarray]] = []
    for _, cols in per_run:
        ident_map = identities.codes(cols.identities)
        judge_map = judges.codes(cols.judges)
        for local, g in enumerate(judge_map.tolist()):
            judge_records.setdefault(g, cols.judge_records[local] if local < len(cols.judge_records) else None)
        row = {"ident": ident_map[cols.columns["ident"]], "judge": judge_map[cols.columns["judge"]]}
        for name in CODE_COLUMNS:
            row[name] = vocabs[name].codes(cols.vocab[name])[cols.columns[name]]
        mapped.append(row)
    n_judges, n_items = len(judges.values), len(vocabs["item"].values)
    keys = [(m["ident"] * n_judges + m["judge"]) * n_items + m["item"] for m in mapped]
    for (run_dir, cols), key, m in zip(per_run, keys, mapped, strict=True):
        _check_duplicates(
            run_dir,
            key,
            cols.columns["line"],
            lambda r, m=m: (identities.values[m["ident"][r]].name, vocabs["item"].values[m["item"][r]]),
        )
    sizes = [len(cols) for _, cols in per_run]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    key = np.concatenate(keys)
    run = np.repeat(np.arange(len(per_run), dtype=np.int64), sizes)
    status = np.concatenate([cols.columns["status"] for _, cols in per_run])
    # The winner of a key: the latest run's row, but a real result outranks any later infra error.
    priority = run + len(per_run) * (status != INFRA_CODE)
    by_key = np.lexsort((priority, key))
    last = np.ones(len(key), dtype=bool)
    last[:-1] = key[by_key][1:] != key[by_key][:-1]
    winners = by_key[last]
    superseded = len(key) - len(winners)
    # where each key was first seen, as (run, line in its scores.jsonl): judged rows keep that order
    # whatever order a run's columnar copy stores its rows in
    lines = np.concatenate([np.asarray(cols.columns["line"], dtype=np.int64) for _, cols in per_run])
    file_place = run * (int(lines.max(initial=0)) + 1) + lines
    del lines
    first_seen = (
        np.minimum.reduceat(file_place[by_key], np.concatenate([[0], np.flatnonzero(last[:-1]) + 1]))
        if len(key)
        else by_key
    )

    def gathered(get: Any) -> np.ndarray:
        return np.concatenate([get(cols, m) for (_, cols), m in zip(per_run, mapped, strict=True)])[winners]

    g_ident, g_judge = gathered(lambda c, m: m["ident"]), gathered(lambda c, m: m["judge"])
    g_item = gathered(lambda c, m: m["item"])
    # Entrants in order: (model name, identity key), then judge key ("" for judge-free).
    pair = g_ident * n_judges + g_judge
    entrants, rank = ordered_entrants(np.unique(pair), identities.values, judges.values, n_judges)
    entrant = rank[pair]
    item_names = vocabs["item"].values
    item_rank = item_ranks(item_names)
    order = np.lexsort((item_rank[g_item], entrant))
    chosen = winners[order]

    codes: dict[str, np.ndarray] = {}
    vocab: dict[str, tuple[str, ...]] = {}
    for name in CODE_COLUMNS:
        codes[name], vocab[name] = _sorted_vocab(gathered(lambda c, m, name=name: m[name])[order], vocabs[name].values)
    _with_system(codes, vocab)
    items = vocab.pop("item")
    item = codes.pop("item")

    def column(name: str) -> np.ndarray:
        return np.concatenate([cols.columns[name] for _, cols in per_run])[chosen]

    metric_names = sorted({name for _, cols in per_run for name in cols.metrics})
    metrics = {
        name: np.concatenate([cols.metrics.get(name, np.full(len(cols), np.nan)) for _, cols in per_run])[chosen]
        for name in metric_names
    }
    flags = {name: np.concatenate([cols.flags[name] for _, cols in per_run])[chosen] for name in FLAG_COLUMNS}
    final = np.full(len(key), -1, dtype=np.int64)
    final[chosen] = np.arange(len(chosen))
    label_parts: list[LabelColumns] = []
    sources: dict[str, str] = {}
    judged_parts: list[JudgedColumns] = []
    judged_first: list[np.ndarray] = []
    first_of_winner = np.empty(len(key), dtype=np.int64)
    first_of_winner[winners] = first_seen
    for r, (_, cols) in enumerate(per_run):
        base = int(offsets[r])
        label_parts.append(cols.labels.renumbered(final[base : base + len(cols)]))
        for local, source in cols.sources.items():
            if final[base + local] >= 0:
                sources[items[int(item[final[base + local]])]] = source
        at = base + cols.judged.row
        kept = np.flatnonzero(final[at] >= 0)
        judged_parts.append(cols.judged.take(kept, final[at[kept]]))
        judged_first.append(first_of_winner[at[kept]])
    judged = JudgedColumns.concat(judged_parts)
    judged = judged.take(np.argsort(np.concatenate(judged_first), kind="stable")) if len(judged) else judged
    table = ScoreTable(
        entrants=tuple(entrants),
        items=items,
        vocab=vocab,
        entrant=entrant[order].astype(np.int32),
        item=item,
        **codes,
        status=column("status").astype(np.int8),
        value=column("value"),
        passed=column("passed"),
        latency_s=column("latency_s"),
        completion_tokens=column("completion_tokens"),
        run=run[chosen].astype(np.int16),
        metrics=_narrowed(metrics),
        flags=_narrowed(flags),
        labels=LabelColumns.concat(label_parts),
        answered=column("answered").astype(bool),
        sources=sources,
        cost=column("cost"),
    )
    return table, superseded, judged


def _with_system(codes: dict[str, np.ndarray], vocab: dict[str, tuple[str, ...]]) -> None:
    """Add the ``system`` column (the part of each domain before ``:``) and complete ``broad_area``:
    rows written without one get the area their task, suite and system give (:func:`broad_area_column`)."""
    systems = [d.split(":", 1)[0] for d in vocab["domain"]]
    vocab["system"] = tuple(sorted(set(systems)))
    lookup = np.array([vocab["system"].index(x) for x in systems], dtype=np.int32)
    codes["system"] = lookup[codes["domain"]] if len(systems) else codes["domain"]
    codes["broad_area"], vocab["broad_area"] = broad_area_column(
        vocab, codes["task"], codes["suite"], codes["system"], recorded=(codes["broad_area"], vocab["broad_area"])
    )


def _sorted_vocab(codes: np.ndarray, names: Sequence[str]) -> tuple[np.ndarray, tuple[str, ...]]:
    """(codes into the sorted vocabulary of the names in use, that vocabulary)."""
    used = codes_in_use(codes, len(names))
    order = sorted(used.tolist(), key=names.__getitem__)
    if order == list(range(len(names))):  # every name in use, already sorted: the codes stand as they are
        return codes.astype(np.int32, copy=False), tuple(names)
    remap = np.zeros(len(names), dtype=np.int32)
    remap[order] = np.arange(len(order), dtype=np.int32)
    return remap[codes], tuple(names[i] for i in order)


def _merge_sorted_run(cols: RunColumns) -> tuple[ScoreTable, int, JudgedColumns] | None:
    """:func:`merge_columns` of one run with no key twice; None when a key repeats. Rows already in
    table order (a judge-free night as ``pool.run`` writes it) are taken without copying a column;
    otherwise (a judged night: its rows are in (model, item) order, the table's are by entrant, judge
    included) every column is put in table order once. Its identity columns are dropped from ``cols``
    once used (the table holds entrants instead)."""
    c = cols.columns
    n_judges = len(cols.judges)
    pair = c["ident"].astype(np.int64) * n_judges + c["judge"]
    entrants, rank = ordered_entrants(np.unique(pair), cols.identities, cols.judges, n_judges)
    entrant = rank[pair]
    del pair
    item_names = cols.vocab["item"]
    item_rank = item_ranks(item_names)
    last = -1
    for start in range(0, len(entrant), SORTED_CHECK_ROWS):  # in slices: no row-sized temporaries
        position = entrant[start : start + SORTED_CHECK_ROWS].astype(np.int64) * max(len(item_names), 1)
        position += item_rank[c["item"][start : start + SORTED_CHECK_ROWS]]
        if position[0] <= last or (len(position) > 1 and not bool((position[1:] > position[:-1]).all())):
            if not _into_table_order(cols, entrant, item_rank):
                return None
            entrant = cols.columns.pop("entrant")
            break
        last = int(position[-1])
    codes: dict[str, np.ndarray] = {}
    vocab: dict[str, tuple[str, ...]] = {}
    for name in CODE_COLUMNS:  # each run code column handed over (or freed once re-coded)
        codes[name], vocab[name] = _sorted_vocab(c.pop(name), cols.vocab[name])
    _with_system(codes, vocab)
    items = vocab.pop("item")
    item = codes.pop("item")
    judged = cols.judged  # its rows are table rows now
    for name in ("ident", "judge", "line"):
        c.pop(name, None)
    table = ScoreTable(
        entrants=tuple(entrants),
        items=items,
        vocab=vocab,
        entrant=entrant,
        item=item,
        **codes,
        status=c["status"].astype(np.int8, copy=False),
        value=c["value"],
        passed=c["passed"],
        latency_s=c["latency_s"],
        completion_tokens=c["completion_tokens"],
        run=np.broadcast_to(np.int16(0), len(entrant)),
        metrics=_narrowed(cols.metrics),
        flags=_narrowed(cols.flags),
        labels=cols.labels,
        answered=c["answered"].view(bool) if c["answered"].dtype == np.uint8 else c["answered"].astype(bool),
        sources={items[int(item[row])]: source for row, source in cols.sources.items()},
        cost=c["cost"],
    )
    return table, 0, judged


def _into_table_order(cols: RunColumns, entrant: np.ndarray, item_rank: np.ndarray) -> bool:
    """Put every row of ``cols`` in table order (entrant, then item id), in place, with the entrant
    column as ``columns["entrant"]``; False (nothing changed) when a (model, judge, item) key repeats."""
    c = cols.columns
    position = entrant.astype(np.int64) * max(len(item_rank), 1) + item_rank[c["item"]]
    order = np.argsort(position, kind="stable")
    position = position[order]
    if len(position) > 1 and not bool((position[1:] > position[:-1]).all()):
        return False
    del position
    table_row = np.empty(len(order), dtype=np.int64)
    table_row[order] = np.arange(len(order), dtype=np.int64)
    for group in (c, cols.metrics, cols.flags):
        for name in list(group):
            if name != "line" and group[name].strides != (0,):  # a broadcast NaN needs no order
                group[name] = group[name][order]
    c["entrant"] = entrant[order]
    cols.labels = cols.labels.renumbered(table_row)
    cols.sources = {int(table_row[row]): source for row, source in cols.sources.items()}
    cols.judged = cols.judged.take(np.arange(len(cols.judged)), table_row[cols.judged.row])
    return True


def _narrowed(columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Sub-metric and audit columns as float32 when every value is one exactly (judge dimensions,
    counts, 0/1 flags): half the memory, the same numbers — their readers widen them to float64
    before any arithmetic (see :attr:`routing.load.table.ScoreTable.metrics`). Takes the columns out of
    ``columns`` one at a time, so a float64 column is freed as soon as its narrow copy exists."""
    out = {}
    for name in list(columns):
        column = columns.pop(name)
        if column.strides == (0,) or column.dtype == np.float32:  # one read-only NaN; read narrow already
            out[name] = column
            continue
        narrow = column.astype(np.float32)
        exact = all(
            np.array_equal(narrow[part].astype(np.float64), column[part], equal_nan=True)
            for part in (slice(start, start + SORTED_CHECK_ROWS) for start in range(0, len(column), SORTED_CHECK_ROWS))
        )
        out[name] = narrow if exact else column
        del column, narrow
    return out


def load_runs(run_dirs: Sequence[Path | str], since: str | None = None) -> Loaded:
    """Read, check and merge the given runs (those created before ``since`` are skipped)."""
    if not run_dirs:
        raise LoadError("no run directory given")
    infos = []
    for run_dir in map(Path, run_dirs):
        if not run_dir.is_dir():
            raise LoadError(f"{run_dir}: not a directory; pass the run directory pool.run wrote")
        infos.append((run_dir, read_summary(run_dir)))
    skipped: list[str] = []
    if since is not None:
        cutoff = parse_time(since, "--since")
        skipped = [str(d) for d, info in infos if parse_time(info.created_at, str(d)) < cutoff]
        infos = [(d, info) for d, info in infos if parse_time(info.created_at, str(d)) >= cutoff]
        if not infos:
            raise LoadError(f"--since {since}: every run was created earlier ({', '.join(skipped)})")
    infos.sort(key=lambda pair: parse_time(pair[1].created_at, pair[0].name))  # stable: argument order breaks ties
    per_run = [(d, run_columns(d)) for d, _ in infos]
    if not sum(len(cols) for _, cols in per_run):
        raise LoadError(f"no score rows in {', '.join(str(d / SCORES_FILENAME) for d, _ in infos)}")
    table, superseded, judged = merge_columns(per_run)
    runs = tuple(info for _, info in infos)
    return Loaded(table, runs, tuple(skipped), superseded, tuple(kept_apart(table, runs)), judged)


def _entrants_by_run(table: ScoreTable, n_runs: int, family: int | None = None) -> list[tuple[int, int]]:
    """The distinct (entrant, run) pairs of the table's rows (of one family), sorted: a count per
    entrant and run, never a row-sized key."""
    rows = table.family == family if family is not None else None
    out: list[tuple[int, int]] = []
    for run in range(n_runs):
        mask = table.run == run if n_runs > 1 else None
        if rows is not None:
            mask = rows if mask is None else mask & rows
        entrants = table.entrant if mask is None else table.entrant[mask]
        out += [(int(e), run) for e in codes_in_use(entrants, len(table.entrants))]
    return sorted(out)


def _differing(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Field names whose value is not the same in every record (a missing field counts as null)."""
    names = sorted({k for r in records for k in r})
    return [k for k in names if len({json.dumps(r.get(k), sort_keys=True, default=str) for r in records}) > 1]


def kept_apart(table: ScoreTable, runs: Sequence[RunInfo]) -> list[dict[str, Any]]:
    """Every name that stands for more than one identity, each identity kept as its own entrant.

    ``{"kind": "model", "name", "differs_in": [field], "identities": [{"label", "key", "runs"}]}``
    per pool name with several model identities, and ``{"kind": "judge", "family", "name",
    "differs_in", "identities": [{"key", "runs"}]}`` per family and judge pool name with several
    judge identities (within a family every verdict uses one prompt contract, so a second identity
    there is another judge, server, setting or prompt version — never merged). ``runs``: run ids.
    """
    pairs = _entrants_by_run(table, len(runs))
    runs_of: dict[int, list[str]] = {}
    for entrant, run in pairs:
        runs_of.setdefault(int(entrant), []).append(runs[int(run)].run_id)
    out: list[dict[str, Any]] = []
    models: dict[str, dict[ModelIdentity, set[str]]] = {}
    for index, entrant in enumerate(table.entrants):
        models.setdefault(entrant.model.name, {}).setdefault(entrant.model, set()).update(runs_of.get(index, ()))
    labels = {e.model: e.model_label for e in table.entrants}
    for name, group in sorted(models.items()):
        if len(group) > 1:
            idents = sorted(group, key=lambda i: labels[i])
            out.append(
                {
                    "kind": "model",
                    "name": name,
                    "differs_in": _differing([i.as_dict() for i in idents]),
                    "identities": [{"label": labels[i], "key": i.key, "runs": sorted(group[i])} for i in idents],
                }
            )
    families = table.names("family")
    judges: dict[tuple[str, str], dict[JudgeIdentity, set[str]]] = {}
    triples = [
        (family, entrant, run)
        for family in range(len(families))
        for entrant, run in _entrants_by_run(table, len(runs), family)
    ]
    for family, entrant, run in triples:
        judge = table.entrants[int(entrant)].judge
        if judge is not None:
            judges.setdefault((families[int(family)], judge.model), {}).setdefault(judge, set()).add(
                runs[int(run)].run_id
            )
    for (family, name), group in sorted(judges.items()):
        if len(group) > 1:
            idents = sorted(group, key=lambda j: j.key())
            out.append(
                {
                    "kind": "judge",
                    "family": family,
                    "name": name,
                    "differs_in": _differing([j.as_dict() for j in idents]),
                    "identities": [{"key": j.key(), "runs": sorted(group[j])} for j in idents],
                }
            )
    return out
