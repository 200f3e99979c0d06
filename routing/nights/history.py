"""The run index: one line per run under a runs root, so nights can be listed, compared and charted.

``ROOT/index.jsonl`` holds one JSON object per appended run (:class:`IndexEntry`): run id, the
run's own creation time, status, pool and data fingerprints, the models with their identities,
the judges per family, the summary totals, the share of answers served from the response cache
and each model's score per family (:mod:`routing.nights.run_scores`, what the trend charts draw). The
index is self-contained on purpose: a moved or deleted run folder is marked ``missing`` when read,
never an error, and its night still shows in the trends.

Appending is one ``O_APPEND`` write followed by ``fsync``, under an exclusive ``flock`` on the index
file, so two runs finishing at once never interleave their lines. A run appended again (a resumed
or rescored run) adds a new line; when reading, the last line per run id wins. A line cut short by
a crash is skipped when read, and the next append starts on a fresh line.

``python -m routing.history [--root runs] [--json]`` lists the index. Exit codes: 0 listed (an
absent index is an empty list); 2 bad input.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eval.files import make_folder
from routing.load.runs import SUMMARY_FILENAME, LoadError, ScoreDigest, digest_scores, parse_time
from routing.nights.run_scores import family_scores

INDEX_FILENAME = "index.jsonl"
RESULTS_FILENAME = "results.jsonl"
ANSWER_STAGE = "answer"
INDEX_SCHEMA = 1
EXIT_OK, EXIT_INPUT = 0, 2


class HistoryError(ValueError):
    """A run folder or index that cannot be used; the message names the file and what to do."""


@dataclass(frozen=True)
class IndexEntry:
    """One run as the index remembers it (a line of ``index.jsonl``)."""

    run_id: str
    dir: str  # as stored: relative to the root when the run lies under it, else absolute
    created_at: str  # the run's creation time (run store), ISO-8601 UTC
    status: str  # running | finished | interrupted (summary.json run_status)
    pool_fingerprint: str | None
    data_fingerprint: str | None
    appended_at: str = ""
    models: Mapping[str, Any] = field(default_factory=dict)  # label -> {name, key, identity}
    judges: Mapping[str, Any] = field(default_factory=dict)  # judge key -> identity
    judges_by_family: Mapping[str, Any] = field(default_factory=dict)  # family -> [judge keys]
    totals: Mapping[str, Any] = field(default_factory=dict)  # summary.json totals
    cached: Mapping[str, Any] = field(default_factory=dict)  # {answers, cached, share} over answer rows
    scores: Mapping[str, Any] = field(default_factory=dict)  # label -> family -> point (run_scores)
    problems: tuple[str, ...] = ()  # what could not be read when the entry was made
    missing: bool = False  # set when read: the folder is gone or holds another run
    path: str = ""  # set when read: the folder, resolved against the root

    def to_json(self) -> dict[str, Any]:
        record = {"schema": INDEX_SCHEMA, **asdict(self)}
        record.pop("missing")
        record.pop("path")
        record["problems"] = list(self.problems)
        return record

    @classmethod
    def from_json(cls, record: Mapping[str, Any]) -> IndexEntry:
        """An entry from an index line; raises ``KeyError``/``TypeError`` on a malformed one."""
        known = {f for f in cls.__dataclass_fields__ if f not in ("missing", "path")}
        values = {k: v for k, v in record.items() if k in known}
        for required in ("run_id", "dir", "created_at", "status"):
            if not isinstance(values.get(required), str):
                raise TypeError(f"{required}: a string expected, got {values.get(required)!r}")
        values["problems"] = tuple(values.get("problems") or ())
        return cls(**values)


# --- reading one run folder ------------------------------------------------------------------


def read_summary_json(run_dir: Path) -> dict[str, Any]:
    """``RUN_DIR/summary.json`` as a dict with string ``run_id`` and ``created_at``."""
    path = run_dir / SUMMARY_FILENAME
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HistoryError(
            f"{path}: not found; pass a run directory pool.run wrote (it writes {SUMMARY_FILENAME} "
            "when the run ends or is interrupted)"
        ) from None
    except (OSError, json.JSONDecodeError) as exc:
        raise HistoryError(
            f"{path}: unreadable ({exc}); re-export it with `python -m pool.run --resume {run_dir}`"
        ) from None
    if not isinstance(summary, dict) or not all(isinstance(summary.get(k), str) for k in ("run_id", "created_at")):
        raise HistoryError(f"{path}: needs string fields run_id and created_at (written by pool.store.export)")
    try:
        parse_time(summary["created_at"], f"{path}: created_at")
    except LoadError as exc:
        raise HistoryError(str(exc)) from None
    return summary


def _answer_rows(path: Path) -> Iterator[tuple[tuple[str, str], bool]]:
    """((model, item_id), cached) per obtained answer row of a results.jsonl; unreadable lines are skipped."""
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and row.get("stage") == ANSWER_STAGE and row.get("status") != "infra_error":
                yield (str(row.get("model")), str(row.get("item_id"))), bool(row.get("cached"))


def answer_cache_flags(run_dir: Path) -> dict[tuple[str, str], bool] | None:
    """``(model, item_id) -> cached`` for the answer rows of ``results.jsonl``; None when it is absent.

    Unreadable lines are skipped: this only says how much of a run rests on cached answers.
    """
    path = run_dir / RESULTS_FILENAME
    return dict(_answer_rows(path)) if path.is_file() else None


def cached_share(flags: Mapping[tuple[str, str], bool] | None) -> dict[str, Any]:
    """``{answers, cached, share}``: obtained answers and how many came from the response cache."""
    if flags is None:
        return {"answers": None, "cached": None, "share": None}
    return _share(len(flags), sum(flags.values()))


def counted_cached_share(run_dir: Path) -> dict[str, Any]:
    """:func:`cached_share` of ``results.jsonl`` counted as it is read (the store writes one answer row
    per unit, so no row needs remembering)."""
    path = run_dir / RESULTS_FILENAME
    if not path.is_file():
        return cached_share(None)
    answers = hits = 0
    for _, cached in _answer_rows(path):
        answers += 1
        hits += cached
    return _share(answers, hits)


def summary_cached_share(summary: Mapping[str, Any]) -> dict[str, Any] | None:
    """:func:`counted_cached_share` from summary.json's per-stage counts, which pool.store.export writes from
    the same store state as results.jsonl; None for a summary without them (then read the rows)."""
    models = summary.get("models")
    if not isinstance(models, dict):
        return None
    answers = hits = 0  # a run that answered nothing: zero answers, as counting its rows finds
    for entry in models.values():
        stages = entry.get("stages") if isinstance(entry, dict) else None
        if not isinstance(stages, dict):
            return None
        tally = stages.get(ANSWER_STAGE)
        if tally is None:
            continue  # a judge that answered no item
        try:
            answers += int(tally["results"]) - int(tally["status"]["infra_error"])
            hits += int(tally["cache_hits"])
        except (KeyError, TypeError, ValueError):
            return None
    return _share(answers, hits)


def _share(answers: int, hits: int) -> dict[str, Any]:
    return {"answers": answers, "cached": hits, "share": round(hits / answers, 4) if answers else None}


def _stored_dir(root: Path, run_dir: Path) -> str:
    """The run folder relative to the root when it lies under it (so moving the whole root keeps
    links), else absolute."""
    absolute = run_dir.resolve()
    try:
        return absolute.relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(absolute)


def snapshot(root: Path, run_dir: Path, digest: ScoreDigest | None = None) -> IndexEntry:
    """The index entry for a run folder (reads summary.json and scores.jsonl, unless ``digest`` is its
    digest already; results.jsonl only for a summary without per-stage counts)."""
    summary = read_summary_json(run_dir)
    problems: list[str] = []
    models: dict[str, Any] = {}
    judges: dict[str, Any] = {}
    by_family: dict[str, list[str]] = {}
    scores: dict[str, Any] = {}
    try:
        digest = digest if digest is not None else digest_scores(run_dir)
    except LoadError as exc:
        problems.append(f"scores not read: {exc}")
        models = {name: {"name": name, "key": None, "identity": None} for name in summary.get("models") or {}}
    else:
        for entrant in digest.entrants:
            models[entrant.model_label] = {
                "name": entrant.model.name,
                "key": entrant.model.key,
                "identity": entrant.model.as_dict(),
            }
            if entrant.judge is not None:
                judges[entrant.judge.key()] = entrant.judge.as_dict()
        by_family = {family: list(keys) for family, keys in digest.judges_by_family.items()}
        scores = family_scores(digest)
    return IndexEntry(
        run_id=summary["run_id"],
        dir=_stored_dir(root, run_dir),
        created_at=summary["created_at"],
        status=str(summary.get("run_status") or "unknown"),
        pool_fingerprint=summary.get("pool_fingerprint"),
        data_fingerprint=summary.get("data_fingerprint"),
        appended_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        models=models,
        judges=judges,
        judges_by_family=by_family,
        totals=summary.get("totals") if isinstance(summary.get("totals"), dict) else {},
        cached=summary_cached_share(summary) or counted_cached_share(run_dir),
        scores=scores,
        problems=tuple(problems),
    )


# --- the index file ----------------------------------------------------------------------------


def _append_line(path: Path, data: bytes) -> None:
    """Append ``data`` under an exclusive flock: O_APPEND write, fsync; a cut-short last line is ended first."""
    make_folder(path.parent, "the runs root")
    created = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size:
            with path.open("rb") as f:
                f.seek(size - 1)
                if f.read(1) != b"\n":
                    data = b"\n" + data
        view = memoryview(data)
        while view:  # a regular file takes the whole write at once; the loop only guards the contract
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)  # also releases the flock
    if created:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def append_run(root: Path, run_dir: Path, digest: ScoreDigest | None = None) -> IndexEntry:
    """Append ``run_dir`` to ``root/index.jsonl`` (created with the root) and return the entry written;
    ``digest``: its scores.jsonl's, when the caller read it already (:func:`snapshot`)."""
    root, run_dir = Path(root), Path(run_dir)
    if not run_dir.is_dir():
        raise HistoryError(f"{run_dir}: not a directory; pass the run directory pool.run wrote")
    entry = snapshot(root, run_dir, digest)
    line = json.dumps(entry.to_json(), ensure_ascii=False, separators=(",", ":")) + "\n"
    _append_line(root / INDEX_FILENAME, line.encode("utf-8"))
    return _located(root, entry)


def parse_index(text: str) -> tuple[list[IndexEntry], list[str]]:
    """(entries, problems) from the index text: the last line per run id wins, oldest run first.

    A last line without its newline is a write cut short by a crash and is skipped silently; any
    other unreadable line is skipped and named in ``problems`` (``line N: ...``).
    """
    latest: dict[str, IndexEntry] = {}
    problems: list[str] = []
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            entry = IndexEntry.from_json(json.loads(line))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            if number < len(lines):  # the last piece has no newline after it: a cut-short append, not a problem
                problems.append(f"line {number}: skipped ({type(exc).__name__}: {exc})")
            continue
        latest.pop(entry.run_id, None)
        latest[entry.run_id] = entry
    return sorted(latest.values(), key=_order), problems


def _order(entry: IndexEntry) -> tuple[datetime, str]:
    try:
        return parse_time(entry.created_at, entry.run_id), entry.run_id
    except LoadError:
        return datetime.min.replace(tzinfo=UTC), entry.run_id


def _located(root: Path, entry: IndexEntry) -> IndexEntry:
    """The entry with ``path`` resolved and ``missing`` set: the folder must hold this run's summary.json.

    A folder moved out of place but still under the root by its run id (``root/<run_id>``) is found there.
    """
    stored = Path(entry.dir)
    for candidate in (stored if stored.is_absolute() else root / stored, root / entry.run_id):
        try:
            summary = json.loads((candidate / SUMMARY_FILENAME).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(summary, dict) and summary.get("run_id") == entry.run_id:
            return replace(entry, path=str(candidate), missing=False)
    return replace(entry, path=str(stored if stored.is_absolute() else root / stored), missing=True)


def read_index_checked(root: Path) -> tuple[list[IndexEntry], list[str]]:
    """:func:`read_index` plus the problems met (skipped lines)."""
    path = Path(root) / INDEX_FILENAME
    try:
        text = path.read_bytes().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        raise HistoryError(f"{path}: unreadable ({exc})") from None
    entries, problems = parse_index(text)
    return [_located(Path(root), e) for e in entries], [f"{path}: {p}" for p in problems]


def read_index(root: Path) -> list[IndexEntry]:
    """Every run in ``root/index.jsonl``, oldest first (last line per run id); an absent index is empty."""
    return read_index_checked(root)[0]


def comparable_entries(
    entries: Sequence[IndexEntry], data_fingerprint: str | None, before: str | None = None, exclude: str | None = None
) -> list[IndexEntry]:
    """Finished runs on the same data (fingerprint equal and known), created before ``before``, oldest first."""
    cutoff = parse_time(before, "before") if before else None
    return [
        e
        for e in entries
        if e.status == "finished"
        and data_fingerprint is not None
        and e.data_fingerprint == data_fingerprint
        and e.run_id != exclude
        and (cutoff is None or _order(e)[0] < cutoff)
    ]


def latest_comparable(root: Path, run_dir: Path) -> Path | None:
    """The latest earlier finished run with ``run_dir``'s data fingerprint whose folder still exists."""
    summary = read_summary_json(Path(run_dir))
    earlier = comparable_entries(
        read_index(Path(root)), summary.get("data_fingerprint"), summary["created_at"], summary["run_id"]
    )
    present = [e for e in earlier if not e.missing]
    return Path(present[-1].path) if present else None


# --- CLI ---------------------------------------------------------------------------------------


def _short(text: Any, width: int = 10) -> str:
    return "–" if not text else str(text)[:width]


def render_listing(entries: Sequence[IndexEntry]) -> list[str]:
    """One line per run, oldest first, for a terminal."""
    head = (
        f"{'run id':<24} {'created (UTC)':<20} {'status':<11} {'data fp':<10} "
        f"{'models':>6} {'ok/err/infra':>14} {'cached':>7}  dir"
    )
    lines = [head]
    for e in entries:
        status = e.totals.get("status") or {}
        counts = f"{status.get('ok', 0)}/{status.get('error', 0)}/{status.get('infra_error', 0)}" if status else "–"
        share = e.cached.get("share")
        cached = "–" if share is None else f"{share:.0%}"
        where = e.path + ("  [missing]" if e.missing else "")
        lines.append(
            f"{_short(e.run_id, 24):<24} {_short(e.created_at, 20):<20} {e.status:<11} "
            f"{_short(e.data_fingerprint):<10} "
            f"{len(e.models):>6} {counts:>14} {cached:>7}  {where}"
        )
    return lines


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m routing.history",
        description="List the runs recorded in ROOT/index.jsonl (oldest first; a moved or deleted "
        "run folder is marked missing).",
        epilog="Exit codes: 0 listed (no index: nothing listed); 2 bad input.",
    )
    parser.add_argument("--root", default="runs", help="runs root holding index.jsonl (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the entries as a JSON array instead of a table")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    root = Path(args.root)
    if root.exists() and not root.is_dir():
        print(f"error: --root {root}: not a directory; pass the folder holding {INDEX_FILENAME}", file=sys.stderr)
        return EXIT_INPUT
    try:
        entries, problems = read_index_checked(root)
    except HistoryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    for problem in problems:
        print(f"warning: {problem}", file=sys.stderr)
    if args.json:
        print(
            json.dumps(
                [{**e.to_json(), "path": e.path, "missing": e.missing} for e in entries], ensure_ascii=False, indent=1
            )
        )
        return EXIT_OK
    missing = sum(e.missing for e in entries)
    print(f"{root / INDEX_FILENAME}: {len(entries)} run(s)" + (f", {missing} missing" if missing else ""))
    if entries:
        print("\n".join(render_listing(entries)))
    return EXIT_OK
