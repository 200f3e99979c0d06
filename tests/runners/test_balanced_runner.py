"""BalancedRunner over scripted fake replicas: who gets which request, failures, closing.

The fakes finish after a seeded number of event-loop turns (``asyncio.sleep(0)``), never after a
wall-clock delay, so every interleaving here is the same on a busy machine as on an idle one.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from runners.balanced import BalancedRunner
from runners.base import GenerationRequest, GenerationResponse


def _request(i: int = 0) -> GenerationRequest:
    return GenerationRequest(model="m", messages=({"role": "user", "content": f"q{i}"},))


def _answer(text: str, error_class: str | None = None) -> GenerationResponse:
    return GenerationResponse(
        text=text,
        finish_reason="stop" if error_class is None else None,
        prompt_tokens=1,
        completion_tokens=1,
        latency_s=0.0,
        error_class=error_class,
    )  # type: ignore[arg-type]


class FakeReplica:
    """Answers after ``turns()`` loop turns; records what the balancer looked like at each call."""

    def __init__(
        self, index: int, turns: random.Random | None = None, *, fail: str | None = None, raise_on_close: bool = False
    ) -> None:
        self.index = index
        self.rng = turns
        self.fail = fail
        self.raise_on_close = raise_on_close
        self.balancer: BalancedRunner | None = None
        self.calls: list[str] = []
        self.seen_in_flight: list[tuple[int, ...]] = []
        self.gate: asyncio.Event | None = None
        self.closed = False

    async def generate(self, request: GenerationRequest) -> GenerationResponse:
        self.calls.append(request.messages[0]["content"])
        if self.balancer is not None:
            self.seen_in_flight.append(self.balancer.in_flight)
        if self.gate is not None:
            await self.gate.wait()
        for _ in range(self.rng.randint(0, 20) if self.rng else 0):
            await asyncio.sleep(0)
        if self.fail == "raise":
            raise RuntimeError(f"replica {self.index} broke")
        if self.fail:
            return _answer("", self.fail)
        return _answer(f"r{self.index}:{request.messages[0]['content']}")

    async def aclose(self) -> None:
        self.closed = True
        if self.raise_on_close:
            raise OSError(f"replica {self.index} failed to close")


def _balanced(replicas: list[FakeReplica]) -> BalancedRunner:
    balancer = BalancedRunner(replicas)
    for replica in replicas:
        replica.balancer = balancer
    return balancer


async def _send_all(balancer: BalancedRunner, n: int, concurrency: int) -> list[GenerationResponse]:
    limit = asyncio.Semaphore(concurrency)

    async def one(i: int) -> GenerationResponse:
        async with limit:
            return await balancer.generate(_request(i))

    return await asyncio.gather(*(one(i) for i in range(n)))


def test_every_replica_answers_under_load_and_none_holds_two_while_another_idles() -> None:
    rng = random.Random(0)
    replicas = [FakeReplica(i, rng) for i in range(3)]
    balancer = _balanced(replicas)

    answers = asyncio.run(_send_all(balancer, 60, concurrency=3))

    assert all(a.ok for a in answers) and len(answers) == 60
    assert all(len(r.calls) >= 10 for r in replicas), [len(r.calls) for r in replicas]
    assert sum(balancer.sent) == 60 and balancer.sent == tuple(len(r.calls) for r in replicas)
    # concurrency = replicas: each request lands on an idle replica, so nobody ever holds two
    assert all(max(seen) <= 1 for r in replicas for seen in r.seen_in_flight)
    assert balancer.in_flight == (0, 0, 0)


def test_the_chosen_replica_always_has_the_fewest_in_flight() -> None:
    rng = random.Random(1)
    replicas = [FakeReplica(i, rng) for i in range(3)]
    balancer = _balanced(replicas)

    asyncio.run(_send_all(balancer, 90, concurrency=7))  # more in flight than replicas

    for replica in replicas:
        for seen in replica.seen_in_flight:  # counted after the pick: the chosen one has +1
            before = list(seen)
            before[replica.index] -= 1
            assert before[replica.index] == min(before), (replica.index, seen)
    assert all(len(r.calls) >= 20 for r in replicas)


def test_requests_fill_replicas_evenly_and_ties_go_to_the_lowest_index() -> None:
    replicas = [FakeReplica(i) for i in range(3)]
    for replica in replicas:
        replica.gate = asyncio.Event()
    balancer = _balanced(replicas)

    async def scenario() -> None:
        tasks = [asyncio.create_task(balancer.generate(_request(i))) for i in range(7)]
        await asyncio.sleep(0)
        assert balancer.in_flight == (3, 2, 2)
        assert [r.calls for r in replicas] == [["q0", "q3", "q6"], ["q1", "q4"], ["q2", "q5"]]
        for replica in replicas:
            assert replica.gate is not None
            replica.gate.set()
        await asyncio.gather(*tasks)

    asyncio.run(scenario())
    assert balancer.in_flight == (0, 0, 0)


def test_one_request_at_a_time_always_goes_to_replica_zero() -> None:
    replicas = [FakeReplica(i) for i in range(2)]
    balancer = _balanced(replicas)

    async def scenario() -> None:
        for i in range(5):
            await balancer.generate(_request(i))

    asyncio.run(scenario())
    assert balancer.sent == (5, 0)


def test_a_failing_replicas_error_is_the_result_and_is_not_sent_again() -> None:
    replicas = [FakeReplica(0, fail="server_error"), FakeReplica(1)]
    balancer = _balanced(replicas)

    async def scenario() -> list[GenerationResponse]:
        return [await balancer.generate(_request(i)) for i in range(3)]

    answers = asyncio.run(scenario())
    # sequential: every request goes to replica 0, which fails each one; none moves to replica 1
    assert [a.error_class for a in answers] == ["server_error"] * 3
    assert replicas[0].calls == ["q0", "q1", "q2"] and replicas[1].calls == []


def test_a_replica_that_refused_a_connection_is_passed_over_while_another_answers() -> None:
    replicas = [FakeReplica(0, fail="connection"), FakeReplica(1)]
    balancer = _balanced(replicas)

    async def scenario() -> list[GenerationResponse]:
        return [await balancer.generate(_request(i)) for i in range(3)]

    answers = asyncio.run(scenario())
    assert answers[0].error_class == "connection"  # the failed request itself is not re-sent
    assert [a.ok for a in answers[1:]] == [True, True]
    assert replicas[0].calls == ["q0"] and replicas[1].calls == ["q1", "q2"]
    assert balancer.unreachable == (True, False)


def test_when_every_replica_refused_connections_requests_still_go_out() -> None:
    replicas = [FakeReplica(0, fail="connection"), FakeReplica(1, fail="connection")]
    balancer = _balanced(replicas)

    async def scenario() -> list[GenerationResponse]:
        return [await balancer.generate(_request(i)) for i in range(4)]

    answers = asyncio.run(scenario())
    assert [a.error_class for a in answers] == ["connection"] * 4
    assert replicas[0].calls == ["q0", "q2", "q3"] and replicas[1].calls == ["q1"]


def test_a_replica_that_raises_propagates_and_frees_its_slot() -> None:
    replicas = [FakeReplica(0, fail="raise"), FakeReplica(1)]
    balancer = _balanced(replicas)

    with pytest.raises(RuntimeError, match="replica 0 broke"):
        asyncio.run(balancer.generate(_request()))
    assert balancer.in_flight == (0, 0) and replicas[1].calls == []


def test_aclose_closes_every_replica_even_when_one_fails() -> None:
    replicas = [FakeReplica(0, raise_on_close=True), FakeReplica(1), FakeReplica(2)]
    balancer = BalancedRunner(replicas)

    with pytest.raises(OSError, match="replica 0 failed to close"):
        asyncio.run(balancer.aclose())
    assert all(r.closed for r in replicas)


def test_no_replicas_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one runner"):
        BalancedRunner([])
