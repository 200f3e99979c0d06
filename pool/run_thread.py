"""A run on a thread of its own: how the sync API works inside a running event loop, and how its async
twins wait for a run without blocking one.

A run drives its requests with ``asyncio.run``, which cannot start inside a running loop (a Jupyter
cell, an async web handler), and keeps its run store on the thread that opened it (SQLite refuses
another). So when the calling thread runs a loop, the whole run goes to a thread of its own, with its
own loop, and the caller waits for it: :func:`call` blocks (the sync API), :func:`wait_for` awaits (the
async twins). With no loop running, :func:`call` runs the work right here, exactly as before.

An :class:`Interrupt` stands in for Ctrl-C, which only ever reaches the main thread: Ctrl-C while
:func:`call` waits, or a cancel of the task awaiting :func:`wait_for`, sets it, and the run stops as an
interrupted run does — its pending requests cancelled, everything finished kept, exit code 130 — so
``resume`` finishes it later.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Interrupt:
    """Lets another thread stop a run's event loop work, as Ctrl-C stops a run on the main thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requested = False
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """``asyncio.run(coroutine)``, cancelled when :meth:`set` is called (before it starts: at once)."""
        return asyncio.run(self._watched(coroutine))

    async def _watched(self, coroutine: Coroutine[Any, Any, T]) -> T:
        with self._lock:
            if self._requested:
                coroutine.close()
                raise asyncio.CancelledError
            self._task, self._loop = asyncio.current_task(), asyncio.get_running_loop()
        try:
            return await coroutine
        finally:
            with self._lock:
                self._task = self._loop = None

    def set(self) -> None:
        """Stop the run: cancel its coroutine if one is running, and any it starts later."""
        with self._lock:
            self._requested = True
            if self._task is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(self._task.cancel)


def loop_running() -> bool:
    """Whether this thread is inside a running event loop (where ``asyncio.run`` cannot start)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _start(work: Callable[[Interrupt], T], interrupt: Interrupt) -> concurrent.futures.Future[T]:
    """``work(interrupt)`` on a new thread; its outcome in the returned future. The thread is not a
    daemon: the interpreter waits for a run to close its store before it exits."""
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def target() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(work(interrupt))
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread as it is
            future.set_exception(exc)

    threading.Thread(target=target, name="medpool-run").start()
    return future


def call(work: Callable[[Interrupt], T]) -> T:
    """``work(interrupt)`` here when no event loop runs on this thread; else on a thread of its own,
    waited for here. Ctrl-C while waiting interrupts the run, and its interrupted result is returned
    once it has stopped (a second Ctrl-C stops the waiting, not the run's wind-down)."""
    interrupt = Interrupt()
    if not loop_running():
        return work(interrupt)
    future = _start(work, interrupt)
    try:
        return future.result()
    except KeyboardInterrupt:
        interrupt.set()
        return future.result()


async def wait_for(work: Callable[[Interrupt], T]) -> T:
    """``work(interrupt)`` on a thread of its own, awaited without blocking the loop. Cancelling the
    awaiting task interrupts the run; the cancellation is raised once the run has stopped."""
    interrupt = Interrupt()
    running = asyncio.wrap_future(_start(work, interrupt))
    try:
        return await asyncio.shield(running)
    except asyncio.CancelledError:
        interrupt.set()
        await asyncio.wait({running})
        if not running.cancelled():
            running.exception()  # retrieved: the caller asked for the cancellation, not the outcome
        raise
