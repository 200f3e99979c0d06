"""Compute one part of a build in a forked child process while the parent computes the rest.

A build's routing validation (k rebuilt leaderboards with their paired tests) needs nothing the
pairwise ratings make, and both are long stretches of Python-bound work over the same read-only
table: on two cores they take the time of the longer one instead of their sum. ``fork`` gives the
child the table without copying or pickling it (its pages are shared until written, and nothing
writes them); only the result — a small JSON-like dict — comes back, pickled through a pipe.

The numbers are the same either way (the child runs the same function on the same data, seeds
fixed). The child is not worth forking for a small table (forking a large process costs tens of
milliseconds), nor for a very large one (its memory), on one CPU, or where ``fork`` does not exist;
then, and when the child dies without an answer (killed, out of memory), the part is computed in
this process, as it always was.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import os
import signal
import sys
import traceback
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from threadpoolctl import threadpool_limits

T = TypeVar("T")

FORK_MIN_ROWS = 200_000  # below this many score rows the part takes less than forking the build costs
# Above this many, memory matters more than time: the child's own allocations (k fold rebuilds) add
# ~0.4 GB beside the parent at 10^7 rows (measured: the tree's PSS 2.07 GB forked, 1.8 GB in one
# process), and a build that large already takes about one JSON read of its data in one process.
FORK_MAX_ROWS = 4_000_000
PR_SET_PDEATHSIG = 1  # Linux prctl option: the signal a child gets when its parent dies


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def blas_share() -> int:
    """BLAS threads each side may use while both compute: half the CPUs (on two CPUs, one each —
    measured, a build's parts ran 15% slower than alone with two BLAS threads apiece contending)."""
    return max(1, usable_cpus() // 2)


def worth_forking(rows: int) -> bool:
    """Whether a part over ``rows`` score rows should run beside the parent: a second CPU, fork, and
    enough work, but not so much that a second process's memory would outweigh the time it saves."""
    return (
        FORK_MIN_ROWS <= rows <= FORK_MAX_ROWS
        and usable_cpus() > 1
        and "fork" in multiprocessing.get_all_start_methods()
    )


class Forked(Generic[T]):
    """``compute()`` started in a forked child when ``beside`` is true; :meth:`result` gives its value
    (or raises its exception). Otherwise, or when the child dies without answering, ``compute()``
    runs in this process when :meth:`result` is called. While the child runs, each side's BLAS
    uses :func:`blas_share` threads; use it as a context manager around the parent's share of work."""

    def __init__(self, compute: Callable[[], T], *, beside: bool, what: str) -> None:
        self._compute, self._what = compute, what
        self._process: Any = None
        self._blas: Any = None
        if beside:
            context = multiprocessing.get_context("fork")
            self._answer, sender = context.Pipe(duplex=False)
            self._process = context.Process(
                target=_child, args=(compute, sender, os.getpid()), name=f"medpool {what}", daemon=True
            )
            self._process.start()
            sender.close()  # the child holds the only sending end: its death ends the parent's wait
            self._blas = threadpool_limits(limits=blas_share(), user_api="blas")

    def result(self) -> T:
        if self._process is None:
            return self._compute()
        try:
            try:
                kind, value = self._answer.recv()
            except EOFError:
                self._process.join()
                print(
                    f"warning: the child process computing the {self._what} ended without an answer "
                    f"(exit code {self._process.exitcode}); computing it here instead",
                    file=sys.stderr,
                )
                return self._compute()
        finally:
            self.close()
        if kind == "error":
            raise value
        return value

    def close(self) -> None:
        """Stop the child if it still runs (the parent was interrupted), reap it, give BLAS its threads back."""
        if self._blas is not None:
            self._blas.restore_original_limits()
            self._blas = None
        if self._process is None:
            return
        if self._process.is_alive():
            self._process.terminate()
        self._process.join()
        self._answer.close()
        self._process = None

    def __enter__(self) -> Forked[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _child(compute: Callable[[], Any], sender: Any, parent: int) -> None:
    """The forked side: die with the parent, quietly on SIGTERM/SIGINT; send ("ok", value) or ("error", exception)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _die_with_parent(parent)
    try:
        with threadpool_limits(limits=blas_share(), user_api="blas"):
            message: tuple[str, Any] = ("ok", compute())
    except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
        message = ("error", exc)
    try:
        sender.send(message)
    except Exception as exc:  # noqa: BLE001 - a value or exception that does not pickle: say so in text
        told = "".join(traceback.format_exception(message[1])) if message[0] == "error" else ""
        sender.send(("error", RuntimeError(f"{told}the child's answer could not be sent back: {exc!r}")))
    sender.close()


def _die_with_parent(parent: int) -> None:
    """On Linux, have the kernel kill this child when its parent dies (a SIGKILLed build leaves no orphan)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the line above took effect
        os._exit(1)
