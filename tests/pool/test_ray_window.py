"""The Ray executor's window, without Ray: what the driver sends to a lane actor, and when.

``RayExecutor._pump`` is driven against a stand-in actor whose calls the test answers by hand, so
the durability rule can be checked step by step: at most 2 × the lane's limit calls in flight, and a
call's place in the window is given back only once its response is committed (the awaitable that
``on_result`` returns is done), so nothing is sent for it before that.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pool.execute.ray_executor import RayExecutor


class StandInActor:
    """``actor.generate.remote(request)`` gives a future the test resolves, like an ObjectRef awaited."""

    def __init__(self) -> None:
        self.calls: dict[Any, asyncio.Future[Any]] = {}
        self.generate = SimpleNamespace(remote=self._remote)

    def _remote(self, request: Any) -> asyncio.Future[Any]:
        assert request not in self.calls, f"{request} sent twice"
        self.calls[request] = asyncio.get_running_loop().create_future()
        return self.calls[request]

    def sent(self) -> list[Any]:
        return list(self.calls)


def _executor(limit: int, actor: StandInActor) -> RayExecutor:
    config = SimpleNamespace(backends={"lane": SimpleNamespace(max_concurrency=limit)})
    executor = RayExecutor(config, {}, Path("unused"))  # type: ignore[arg-type]
    executor.actors["lane"] = actor
    return executor


async def _turns(n: int = 5) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def test_at_most_twice_the_limit_in_flight_and_a_place_freed_only_after_its_commit() -> None:
    async def scenario() -> None:
        actor = StandInActor()
        commits: dict[int, asyncio.Future[None]] = {}
        recorded: list[tuple[int, str]] = []

        def on_result(job: Any, response: str) -> asyncio.Future[None]:
            recorded.append((job.request, response))
            commits[job.request] = asyncio.get_running_loop().create_future()
            return commits[job.request]

        jobs = [SimpleNamespace(request=i) for i in range(7)]
        run = asyncio.create_task(_executor(2, actor)._pump("lane", jobs, on_result, lambda job: False))
        await _turns()
        assert actor.sent() == [0, 1, 2, 3]  # the window: 2 × max_concurrency

        actor.calls[2].set_result("answer 2")
        await _turns()
        assert recorded == [(2, "answer 2")]
        assert actor.sent() == [0, 1, 2, 3], "sent again before the answer was committed"

        commits[2].set_result(None)
        await _turns()
        assert actor.sent() == [0, 1, 2, 3, 4]

        for i in (0, 1, 3, 4):
            actor.calls[i].set_result(f"answer {i}")
        await _turns()
        assert actor.sent() == [0, 1, 2, 3, 4]  # four answers in, none committed: nothing more sent
        for i in (0, 1):
            commits[i].set_result(None)
        await _turns()
        assert actor.sent() == [0, 1, 2, 3, 4, 5, 6]
        assert not run.done(), "ended with answers received but not committed"

        for i in (5, 6):
            actor.calls[i].set_result(f"answer {i}")
        await _turns()
        for i in (3, 4, 5, 6):
            commits[i].set_result(None)
        await asyncio.wait_for(run, 5)
        assert sorted(recorded) == [(i, f"answer {i}") for i in range(7)]

    asyncio.run(scenario())


def test_settled_jobs_are_never_sent_and_a_committed_answer_frees_its_place_at_once() -> None:
    async def scenario() -> None:
        actor = StandInActor()
        recorded: list[int] = []

        def on_result(job: Any, response: str) -> None:
            recorded.append(job.request)  # committed already: None

        jobs = [SimpleNamespace(request=i) for i in range(6)]
        run = asyncio.create_task(_executor(1, actor)._pump("lane", jobs, on_result, lambda job: job.request % 3 == 0))
        await _turns()
        assert actor.sent() == [1, 2]  # 0 was settled by the driver; the window is 2
        actor.calls[1].set_result("a")
        await _turns()
        assert actor.sent() == [1, 2, 4]  # 3 settled, 4 sent in 1's place
        actor.calls[2].set_result("b")
        actor.calls[4].set_result("c")
        await _turns()
        actor.calls[5].set_result("d")
        await asyncio.wait_for(run, 5)
        assert actor.sent() == [1, 2, 4, 5] and sorted(recorded) == [1, 2, 4, 5]

    asyncio.run(scenario())


def test_a_failed_call_ends_the_lane_with_its_error_and_cancels_the_calls_in_flight() -> None:
    async def scenario() -> None:
        actor = StandInActor()
        jobs = [SimpleNamespace(request=i) for i in range(5)]
        run = asyncio.create_task(
            _executor(1, actor)._pump("lane", jobs, lambda job, response: None, lambda job: False)
        )
        await _turns()
        actor.calls[0].set_exception(RuntimeError("actor gone for good"))
        with pytest.raises(BaseExceptionGroup) as caught:
            await asyncio.wait_for(run, 5)
        assert caught.group_contains(RuntimeError, match="actor gone for good")
        assert actor.calls[1].cancelled()
        assert actor.sent() == [0, 1]

    asyncio.run(scenario())
