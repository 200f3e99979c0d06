"""Score judge-free answers in a process of their own while the run is still answering.

Scoring is the driver's largest cost per answer after the HTTP call and the store's commit, and the
driver's event loop bounds a whole run (on a cluster, the whole cluster). So a large run hands it
to a worker: ``python -m pool.score.arrival RUN_DIR RUN_ID FD INDEX_FD`` rebuilds the plan from the
run folder as a resume would, tails the run store (answers committed since the last look, by rowid,
every ``POLL_S``), makes each judge-free answer's scores.jsonl row with the scoring stage's own
code (:meth:`ScoringStage.arrival_entry`) and appends it to the anonymous file the driver passed
as FD, then notes where the row is in the second anonymous file, INDEX_FD: an open-addressing hash
table on disk from (model, item_id) to (offset, length) (:class:`ArrivalRows`), which the driver
reads when it scores. Neither process holds the places of the rows, so memory stays the same
however many answers a run has. When answering is over the driver writes ``finish``; the worker
scores what is left, reports ``{"scored": true, "rows": N}`` (a JSON line on stdout) and exits 0.
A run without a judge writes nothing to its store after answering, so its driver writes
``export`` instead: the worker then also writes results.jsonl (:func:`pool.store.export.export_results_jsonl`)
and counts the store for summary.json, and reports both (``{"costs": ..., "summary": ...}``) while
the driver scores, writes scores.jsonl and reads it for the nightly index: the last passes over
the run go side by side, on two cores.

Nothing depends on the worker: a row it did not make — judged item, infra error, scorer that
raised, a worker that failed or was killed, a row the index had no room for — is scored by
:meth:`ScoringStage.run` as without it, and the bytes of scores.jsonl are the same either way
(tests/pool/test_arrival_scoring.py); so are those of results.jsonl, which the driver exports itself
when the worker's export failed. A driver that dies closes the worker's stdin; the worker sees
end of file without ``finish`` and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import logging
import os
import select
import signal
import struct
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from pool.plan import ANSWER_STAGE, plan_from_options
from pool.run_spec import stored_options
from pool.score.stage import ScoringStage
from pool.store.export import export_results_with_costs, summarize_store
from pool.store.run_store import RunStore

log = logging.getLogger(__name__)

# Below this many judge-free answers to score, the worker's start (a Python process importing the
# scorers and loading the suite, ~0.9 s of CPU) costs more than scoring them after the last answer.
MIN_ANSWERS = 2_000
POLL_S = 0.05  # how often the worker looks for new answers: rows wait at most this long
FINISH = b"finish\n"  # score what is left, then exit
EXPORT = b"export\n"  # finish, then export results.jsonl: the store will not change any more
STOP_WAIT_S = 10.0  # how long an interrupted run waits for a worker to drop its half-written export
LINE_LIMIT = 1 << 22  # one report line (the export's counts: a few hundred bytes per model)
# The index file: a header (magic, slot count) then the slots (key, offset, length); a key of 0 is an
# empty slot. Twice as many slots as the plan has units keeps probes short (at most half full).
_HEADER = struct.Struct("<8sQ")
_SLOT = struct.Struct("<QQQ")
_MAGIC = b"mpidx001"
_PROBE_SLOTS = 4  # slots read at once when looking a key up
_MAX_FILL = 0.75  # past this the worker stops indexing: the stage scores the rest itself


def _key(model: str, item_id: str) -> int:
    """The index's key of a row: 64 bits of blake2b over (model, item_id), never 0 (the empty slot);
    the same in every process (``hash()`` of a string is not)."""
    digest = hashlib.blake2b(f"{model}\0{item_id}".encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little") or 1


def _slots_for(units: int) -> int:
    """A power of two at least twice ``units`` (at least 8)."""
    return max(8, 1 << (2 * max(units, 1) - 1).bit_length())


class _IndexWriter:
    """The worker's side of the index: puts (key, offset, length) in the first free slot from the key's
    own, on disk. Holds one bit per slot (which are taken), nothing per row."""

    def __init__(self, fd: int, units: int) -> None:
        self.fd, self.slots = fd, _slots_for(units)
        self.mask = self.slots - 1
        self.taken = bytearray(self.slots // 8)
        self.rows = 0
        os.ftruncate(fd, 0)  # whatever the file held before is no slot of this table
        os.ftruncate(fd, _HEADER.size + self.slots * _SLOT.size)  # sparse: zeros are empty slots
        os.pwrite(fd, _HEADER.pack(_MAGIC, self.slots), 0)

    def put(self, model: str, item_id: str, offset: int, length: int) -> None:
        if self.rows >= _MAX_FILL * self.slots:
            return  # not indexed: the stage scores this answer again
        key = _key(model, item_id)
        slot = key & self.mask
        while self.taken[slot >> 3] & (1 << (slot & 7)):
            slot = (slot + 1) & self.mask
        self.taken[slot >> 3] |= 1 << (slot & 7)
        os.pwrite(self.fd, _SLOT.pack(key, offset, length), _HEADER.size + slot * _SLOT.size)
        self.rows += 1


class ArrivalRows:
    """Rows the worker scored before :meth:`ScoringStage.run`, as the stage takes them (``take``,
    ``close``): the rows in ``file`` in arrival order, and ``index``, the worker's hash table on disk
    from (model, item_id) to each row's place. Both are read with ``os.pread`` (no offset moves, no
    page of either is kept), so the driver holds nothing per row however large the run."""

    def __init__(self, file: BinaryIO, index: BinaryIO, rows: int = 0) -> None:
        self.file, self.index, self.rows = file, index, rows
        header = os.pread(index.fileno(), _HEADER.size, 0)
        magic, slots = _HEADER.unpack(header) if len(header) == _HEADER.size else (b"", 0)
        self.mask = slots - 1 if magic == _MAGIC and slots and not slots & (slots - 1) else -1

    def __len__(self) -> int:
        """How many rows the worker indexed."""
        return self.rows

    def _place(self, model: str, item_id: str) -> tuple[int, int] | None:
        if self.mask < 0:
            return None
        key = _key(model, item_id)
        slot, fd, left = key & self.mask, self.index.fileno(), self.mask + 1
        while left > 0:  # the writer leaves a quarter of the slots empty: a probe ends at one
            window = min(_PROBE_SLOTS, self.mask + 1 - slot, left)  # up to the table's end, then from slot 0
            left -= window
            data = os.pread(fd, window * _SLOT.size, _HEADER.size + slot * _SLOT.size)
            for found, offset, length in _SLOT.iter_unpack(data[: len(data) - len(data) % _SLOT.size]):
                if found == key:
                    return offset, length
                if found == 0:
                    return None
            if len(data) < window * _SLOT.size:  # a short file: never written this far
                return None
            slot = (slot + window) & self.mask
        return None

    def take(self, model: str, item_id: str) -> str | None:
        """The row's spool entry (see :func:`pool.score.stage._spool_entry`), or None: not scored
        ahead, not indexed, or bytes that do not name the row (then it is scored again)."""
        place = self._place(model, item_id)
        if place is None:
            return None
        offset, length = place
        try:
            entry = os.pread(self.file.fileno(), length, offset).decode("utf-8")
            named = json.loads(entry.partition("\t")[0])[:2]
        except ValueError:
            return None
        return entry if named == [model, item_id] else None

    def close(self) -> None:
        self.file.close()
        self.index.close()


class ArrivalWorker:
    """The driver's side: start the worker, tell it to finish, hand the rows it indexed to the stage."""

    def __init__(self, proc: asyncio.subprocess.Process, file: BinaryIO, index: BinaryIO) -> None:
        self.proc = proc
        self.files: tuple[BinaryIO, BinaryIO] | None = (file, index)  # the rows and their index, until taken
        self.rows = 0  # how many rows the worker indexed (its report at the end of scoring)
        self.scored = asyncio.Event()  # the reports of scoring are over (all_scored: as they should be)
        self.all_scored = False
        self.exported_report: dict[str, Any] | None = None  # the export's cost tally and the store's counts
        self.reading = asyncio.ensure_future(self._read_reports())

    @classmethod
    async def start(cls, run_dir: Path, run_id: str) -> ArrivalWorker | None:
        """The worker for ``run_id`` in ``run_dir`` (whose store holds the run and its options), or
        None when no process can be started (the stage then scores every answer itself)."""
        file = tempfile.TemporaryFile("w+b", dir=run_dir)  # noqa: SIM115 - the rows', closed with them
        index = tempfile.TemporaryFile("w+b", dir=run_dir)  # noqa: SIM115 - their places', closed with them
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "pool.score.arrival",
                str(run_dir),
                run_id,
                str(file.fileno()),
                str(index.fileno()),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                pass_fds=(file.fileno(), index.fileno()),
                limit=LINE_LIMIT,
            )
        except OSError as exc:
            file.close()
            index.close()
            log.warning("answers are scored after the last one arrives: no scoring worker (%s)", exc)
            return None
        return cls(proc, file, index)

    async def _read_reports(self) -> None:
        """Note the end of scoring (``{"scored": true, "rows": N}``) and the export's report
        (``{"costs": ..., "summary": ...}``)."""
        assert self.proc.stdout is not None
        try:
            while line := await self.proc.stdout.readline():
                report = json.loads(line)
                if report.get("scored") is True:
                    self.rows = int(report.get("rows", 0))
                    self.all_scored = True
                    self.scored.set()
                else:
                    self.exported_report = {"costs": dict(report["costs"]), "summary": dict(report["summary"])}
        finally:
            self.scored.set()  # wakes finish() whatever ended the reports

    def _garbled(self) -> BaseException | None:
        """What a report that could not be read raised in :meth:`_read_reports`, if one did."""
        if self.reading.done() and not self.reading.cancelled():
            return self.reading.exception()
        return None

    def _ended_with(self) -> str:
        """Why the worker's reports ended: a garbled report, or its exit code."""
        exc = self._garbled()
        return f"{type(exc).__name__}: {exc}" if exc is not None else str(self.proc.returncode)

    async def finish(self, export: bool = False) -> ArrivalRows | None:
        """Tell the worker answering is over and take the rows it made; None if it failed (logged).
        ``export``: the store will not change any more, so the worker goes on to write results.jsonl
        (:meth:`exported`) while the driver scores."""
        assert self.proc.stdin is not None
        with contextlib.suppress(ConnectionError):  # a worker that already exited: its exit code says why
            self.proc.stdin.write(EXPORT if export else FINISH)
            await self.proc.stdin.drain()
        self.proc.stdin.close()
        await self.scored.wait()
        done = self.all_scored and (export or await self.proc.wait() == 0)
        if not done or self.files is None:
            if self.reading.done():  # its reports ended: it exited, or is about to; its code says why
                await self._exited()
            await self.close()
            log.warning(
                "the scoring worker ended with %s; the scoring stage scores every answer itself", self._ended_with()
            )
            return None
        (file, index), self.files = self.files, None
        return ArrivalRows(file, index, self.rows)

    async def exported(self) -> dict[str, Any] | None:
        """After ``finish(export=True)``: ``{"costs": ..., "summary": ...}``, the cost tally of the
        results.jsonl the worker wrote and :func:`pool.store.export.summarize_store` of the final store; None
        if it did not get that far (logged: the run exports and counts as without a worker)."""
        await asyncio.wait([self.reading])
        await self.proc.wait()
        report = self.exported_report if self.proc.returncode == 0 and self._garbled() is None else None
        if report is None:
            log.warning(
                "the scoring worker ended with %s before its export; the run writes results.jsonl itself",
                self._ended_with(),
            )
        await self.close()
        return report

    async def _exited(self) -> bool:
        """Wait (at most ``STOP_WAIT_S``) for the worker's exit; whether it came."""
        try:
            await asyncio.wait_for(asyncio.shield(self.proc.wait()), STOP_WAIT_S)
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        """Stop the worker if it still runs (an interrupted run) and drop rows nobody took. SIGTERM
        first: an export cut short removes its temporary file."""
        if self.proc.returncode is None:
            # Not after its end of output: signalling polls the child, which would reap it from under
            # asyncio's watcher (that then reports exit 255).
            if not self.reading.done():
                with contextlib.suppress(ProcessLookupError):
                    self.proc.terminate()
            if not await self._exited():
                with contextlib.suppress(ProcessLookupError):
                    self.proc.kill()
        self.reading.cancel()
        await asyncio.wait([self.reading])  # ended, whatever it raised; a cancel of this task still propagates
        with contextlib.suppress(Exception):
            await self.proc.wait()
        if self.files is not None:
            for file in self.files:
                file.close()
            self.files = None


class _Tail:
    """The worker's side: the answers already read (by rowid) and the end of ``out``. Each batch's rows
    are flushed to ``out`` before their places go into ``index``, so an indexed place always points at
    bytes in the file; nothing grows with the run."""

    def __init__(self, stage: ScoringStage, out: BinaryIO, index: _IndexWriter) -> None:
        self.stage, self.out, self.index = stage, out, index
        self.after = 0  # rowid of the last answer read
        self.end = 0  # bytes written to out

    def catch_up(self) -> None:
        """Score every answer committed since the last call."""
        while rows := self.stage.store.results_after(self.stage.run_id, ANSWER_STAGE, self.after):
            places = []
            for rowid, answer in rows:
                self.after = rowid
                entry = self.stage.arrival_entry(answer)
                if entry is not None:
                    data = entry.encode("utf-8")
                    self.out.write(data)
                    places.append((answer.model, answer.item_id, self.end, len(data)))
                    self.end += len(data)
            if places:
                self.out.flush()
                for place in places:
                    self.index.put(*place)


def _follow(tail: _Tail, control: int) -> bytes | None:
    """Score as answers come until the driver says ``finish`` or ``export`` (returned), or is gone (None:
    end of file)."""
    said = b""
    while not said.endswith((FINISH, EXPORT)):
        tail.catch_up()
        if select.select([control], [], [], POLL_S)[0]:
            chunk = os.read(control, 64)
            if not chunk:
                return None
            said += chunk
    tail.catch_up()  # everything committed before the driver said finish
    return FINISH if said.endswith(FINISH) else EXPORT


def _report(out: TextIO, message: Any) -> None:
    """One report to the driver: a JSON line, flushed (see :meth:`ArrivalWorker._read_reports`)."""
    out.write(json.dumps(message, ensure_ascii=False) + "\n")
    out.flush()


def _stop(signum: int, frame: Any) -> None:
    sys.exit(128 + signum)  # unwinds: an export cut short removes its temporary file


def main(argv: Sequence[str] | None = None) -> int:
    """The worker; exit 0 having indexed every row's place (and exported, when told to), 1 when the driver
    went away, 2 on a changed plan."""
    parser = argparse.ArgumentParser(
        prog="python -m pool.score.arrival",
        description="Internal: started by pool.run for a run with many judge-free "
        "answers; scores them while the run answers (see the module doc).",
    )
    parser.add_argument("run_dir", type=Path, help="the run's folder (its run.sqlite holds the run and its options)")
    parser.add_argument("run_id")
    parser.add_argument("fd", type=int, help="an open file descriptor the rows are appended to")
    parser.add_argument(
        "index_fd", type=int, help="an open file descriptor of the (empty) file the rows are indexed in"
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the driver ends the worker
    signal.signal(signal.SIGTERM, _stop)
    run_dir, run_id, fd = args.run_dir, args.run_id, args.fd
    plan, _ = plan_from_options(stored_options(run_dir))
    with RunStore(run_dir, create=False) as store, open(fd, "wb") as out:
        run = store.get_run(run_id)
        if run is None or (run.pool_fingerprint, run.data_fingerprint) != plan.fingerprints():
            why = f"no run {run_id!r}" if run is None else f"the pool or data changed since run {run_id!r} was planned"
            print(f"{run_dir}: {why}; its answers are scored after the last one arrives", file=sys.stderr)
            return 2
        stage = ScoringStage(
            run_id=run_id, store=store, config=plan.config, items=plan.items_by_id, judges=(), session=None
        )
        index = _IndexWriter(args.index_fd, plan.unit_count)
        said = _follow(_Tail(stage, out, index), sys.stdin.fileno())
        if said is None:
            return 1
        _report(sys.stdout, {"scored": True, "rows": index.rows})
    if said == EXPORT:
        costs = export_results_with_costs(run_dir, run_id, plan.config)
        with RunStore(run_dir, create=False) as store:
            counted = summarize_store(store, run_id, 0.0)
        _report(sys.stdout, {"costs": costs, "summary": counted})
    return 0


if __name__ == "__main__":
    sys.exit(main())
