"""Score judge-free answers in a process of their own while the run is still answering.

Scoring is the driver's largest cost per answer after the HTTP call and the store's commit, and the
driver's event loop bounds a whole run (on a cluster, the whole cluster). So a large run hands it
to a worker: ``python -m pool.arrival_scoring RUN_DIR RUN_ID FD`` rebuilds the plan from the run
folder as a resume would, tails the run store (answers committed since the last look, by rowid,
every ``POLL_S``), makes each judge-free answer's scores.jsonl row with the scoring stage's own
code (:meth:`ScoringStage.arrival_entry`) and appends it to the anonymous file the driver passed
as FD, then reports where the batch's rows are (a JSON line of model, item_id, offset, length on
stdout), which the driver adds to the stage's :class:`ArrivalSpool` as it runs. When answering is
over the driver writes ``finish``; the worker scores what is left and exits 0.

Nothing depends on the worker: a row it did not make — judged item, infra error, scorer that
raised, a worker that failed or was killed — is scored by :meth:`ScoringStage.run` as without it,
and the bytes of scores.jsonl are the same either way (tests/test_arrival_scoring.py). A driver
that dies closes the worker's stdin; the worker sees end of file without ``finish`` and exits.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import select
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO, TextIO

from pool.plan import ANSWER_STAGE
from pool.run_spec import stored_options
from pool.scoring import ArrivalSpool, ScoringStage
from pool.store import RunStore

log = logging.getLogger(__name__)

# Below this many judge-free answers to score, the worker's start (a Python process importing the
# scorers and loading the suite, ~0.9 s of CPU) costs more than scoring them after the last answer.
MIN_ANSWERS = 2_000
POLL_S = 0.05  # how often the worker looks for new answers: rows wait at most this long
FINISH = b"finish\n"
LINE_LIMIT = 1 << 22  # one report line: the places of up to a page of the store's rows (~100 bytes each)


class ArrivalWorker:
    """The driver's side: start the worker, index its rows as it reports them, tell it to finish."""

    def __init__(self, proc: asyncio.subprocess.Process, file: BinaryIO) -> None:
        self.proc = proc
        self.spool: ArrivalSpool | None = ArrivalSpool(file)
        self.reading = asyncio.ensure_future(self._read_places())

    @classmethod
    async def start(cls, run_dir: Path, run_id: str) -> ArrivalWorker | None:
        """The worker for ``run_id`` in ``run_dir`` (whose store holds the run and its options), or
        None when no process can be started (the stage then scores every answer itself)."""
        file = tempfile.TemporaryFile("w+b", dir=run_dir)  # noqa: SIM115 - the spool's, closed with it
        try:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "pool.arrival_scoring", str(run_dir), run_id, str(file.fileno()),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, pass_fds=(file.fileno(),),
                limit=LINE_LIMIT)
        except OSError as exc:
            file.close()
            log.warning("answers are scored after the last one arrives: no scoring worker (%s)", exc)
            return None
        return cls(proc, file)

    async def _read_places(self) -> None:
        """Index each batch of rows the worker reports (a JSON line of [model, item_id, offset, length])."""
        assert self.proc.stdout is not None
        while line := await self.proc.stdout.readline():
            if self.spool is not None:
                for model, item_id, offset, length in json.loads(line):
                    self.spool.place(model, item_id, offset, length)

    async def finish(self) -> ArrivalSpool | None:
        """Tell the worker answering is over and take the rows it made; None if it failed (logged)."""
        assert self.proc.stdin is not None
        with contextlib.suppress(ConnectionError):  # a worker that already exited: its exit code says why
            self.proc.stdin.write(FINISH)
            await self.proc.stdin.drain()
        self.proc.stdin.close()
        try:
            await self.reading
            code: int | str = await self.proc.wait()
        except (ValueError, TypeError) as exc:  # a garbled report: the rows are not trusted
            code = f"{type(exc).__name__}: {exc}"
        if code != 0 or self.spool is None:
            log.warning("the scoring worker ended with %s; the scoring stage scores every answer itself", code)
            await self.close()
            return None
        spool, self.spool = self.spool, None
        return spool

    async def close(self) -> None:
        """Stop the worker if it still runs (an interrupted run) and drop rows nobody took."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        self.reading.cancel()
        await asyncio.wait([self.reading])  # ended, whatever it raised; a cancel of this task still propagates
        with contextlib.suppress(Exception):
            await self.proc.wait()
        if self.spool is not None:
            self.spool.close()
            self.spool = None


class _Tail:
    """The worker's side: the answers already read (by rowid) and the end of ``out``. Each batch's rows
    are flushed to ``out`` before their places are reported on ``report``, so a place the driver has
    always points at bytes in the file; nothing grows with the run."""

    def __init__(self, stage: ScoringStage, out: BinaryIO, report: TextIO) -> None:
        self.stage, self.out, self.report = stage, out, report
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
                self.report.write(json.dumps(places, ensure_ascii=False) + "\n")
                self.report.flush()


def _follow(tail: _Tail, control: int) -> bool:
    """Score as answers come until the driver says ``finish`` (True), or is gone (False: end of file)."""
    said = b""
    while not said.endswith(FINISH):
        tail.catch_up()
        if select.select([control], [], [], POLL_S)[0]:
            chunk = os.read(control, 64)
            if not chunk:
                return False
            said += chunk
    tail.catch_up()  # everything committed before the driver said finish
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """The worker; exit 0 having reported every row's place, 1 when the driver went away, 2 on a changed plan."""
    parser = argparse.ArgumentParser(prog="python -m pool.arrival_scoring",
                                     description="Internal: started by pool.run for a run with many judge-free "
                                                 "answers; scores them while the run answers (see the module doc).")
    parser.add_argument("run_dir", type=Path, help="the run's folder (its run.sqlite holds the run and its options)")
    parser.add_argument("run_id")
    parser.add_argument("fd", type=int, help="an open file descriptor the rows are appended to")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole group: the driver ends the worker
    run_dir, run_id, fd = args.run_dir, args.run_id, args.fd
    # The driver's module, imported here because it imports this one.
    from pool.api import plan_for_options

    plan = plan_for_options(stored_options(run_dir))
    with RunStore(run_dir, create=False) as store, open(fd, "wb") as out:
        run = store.get_run(run_id)
        if run is None or (run.pool_fingerprint, run.data_fingerprint) != plan.fingerprints():
            why = f"no run {run_id!r}" if run is None else f"the pool or data changed since run {run_id!r} was planned"
            print(f"{run_dir}: {why}; its answers are scored after the last one arrives", file=sys.stderr)
            return 2
        stage = ScoringStage(run_id=run_id, store=store, config=plan.config, items=plan.items_by_id,
                             judge=None, endpoints=None, scheduler=None)
        if not _follow(_Tail(stage, out, sys.stdout), sys.stdin.fileno()):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
