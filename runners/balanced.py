"""One runner in front of several identical replicas: each request goes to the least busy one.

Several single-slot servers (llama.cpp replicas of the same weights) answer faster together than
one server with all the threads, but only if no replica queues a request while another idles.
:class:`BalancedRunner` counts the requests in flight per replica and sends each new one to the
replica with the fewest; a tie goes to the lowest index, so with one request at a time replica 0
answers everything (deterministic, and its log alone holds the timings of a sequential run).

A replica's failure is that request's result: the balancer never re-sends it elsewhere. Retries
(with backoff, honouring ``Retry-After``) already live inside each replica's runner, and a second
layer of silent re-sends would hide a broken replica and multiply the attempts a result records.

A replica whose last call ended in a ``connection`` error (nothing listening: its server died) is
passed over while any other replica's last call did not. Without that rule a dead replica, which
fails fast and so always looks idle, would draw more than its share of the requests. When every
replica is in that state the usual rule applies again, so nothing is refused outright.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from runners.base import GenerationRequest, GenerationResponse, Runner


class BalancedRunner:
    """A :class:`~runners.base.Runner` over ``runners``: fewest in flight first, ties to the lowest index."""

    def __init__(self, runners: Sequence[Runner]) -> None:
        if not runners:
            raise ValueError("BalancedRunner needs at least one runner (one per replica)")
        self._runners = tuple(runners)
        self._in_flight = [0] * len(self._runners)
        self._sent = [0] * len(self._runners)
        self._unreachable = [False] * len(self._runners)  # last call: a connection error

    @property
    def replicas(self) -> int:
        return len(self._runners)

    @property
    def in_flight(self) -> tuple[int, ...]:
        """Requests each replica is answering right now."""
        return tuple(self._in_flight)

    @property
    def sent(self) -> tuple[int, ...]:
        """Requests each replica has been given so far (for benchmarks and logs)."""
        return tuple(self._sent)

    @property
    def unreachable(self) -> tuple[bool, ...]:
        """Replicas whose last call ended in a connection error (passed over while others answer)."""
        return tuple(self._unreachable)

    def _pick(self) -> int:
        candidates = [i for i, down in enumerate(self._unreachable) if not down] or range(len(self._runners))
        # min() returns the first minimum: the lowest index among the least busy.
        return min(candidates, key=self._in_flight.__getitem__)

    async def generate(self, request: GenerationRequest) -> GenerationResponse:
        index = self._pick()  # no await between pick and count: no other request can interleave
        self._in_flight[index] += 1
        self._sent[index] += 1
        try:
            response = await self._runners[index].generate(request)
        finally:
            self._in_flight[index] -= 1
        self._unreachable[index] = response.error_class == "connection"
        return response

    async def aclose(self) -> None:
        """Close every replica's runner, even if one fails to close; then raise the first failure."""
        outcomes = await asyncio.gather(*(r.aclose() for r in self._runners), return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
