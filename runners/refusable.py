"""Optional request fields a server may refuse: sent until refused once, then left out for the rest of the run.

Some fields are extras the answer can do without: a judge verdict's ``response_format`` (constrained
decoding, :mod:`runners.structured`) and a weighing judge's ``logprobs`` / ``top_logprobs``
(``judge.weighting``). A hosted API that does not take one answers every request carrying it with a
4xx, which would fail every judge call of the run. So a runner keeps one :class:`FieldProbe`: the
first request carrying a field the server has not answered yet finds out, the others wait for it
(so a refusing server sees exactly one refused request however many are in flight); on a refusal the
field is remembered as refused, one warning line says so and how to stop asking, and that request is
sent again without it, as every later one is. A field the server answered with a 2xx is remembered as
taken. Memory is the runner's, so the run's: a new run asks again.

What counts as a refusal of a field (:class:`OptionalField`): a 400 or 422 whose message names it;
for a field with ``unnamed_refusal`` (``logprobs``), also any other client 4xx to a request carrying
it, confirmed by the same request answering without it (a 400 for a bad model id fails both and
refuses nothing).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from runners.base import GenerationResponse

log = logging.getLogger(__name__)

NAMED_REFUSAL_STATUSES = (400, 422)  # 422: FastAPI-based servers refuse an unknown body field with it


@dataclass(frozen=True)
class OptionalField:
    """One request field the answer can do without: how a refusal names it and what leaving it out means."""

    name: str  # the body field, as the warning names it
    named_by: re.Pattern[str]  # a refusal's message names the field
    left_out: str  # what the run does without it, and the setting that stops asking (the warning's tail)
    unnamed_refusal: bool = False  # any client 4xx to a request carrying it may be its refusal

    def refused_by_name(self, response: GenerationResponse) -> bool:
        """A 400/422 whose message names this field."""
        status = _client_status(response)
        last = response.attempts[-1] if response.attempts else None
        return (
            status in NAMED_REFUSAL_STATUSES
            and last is not None
            and bool(self.named_by.search(response.error_detail or last.detail))
        )


def _client_status(response: GenerationResponse) -> int | None:
    """The HTTP status of a client-error answer (4xx other than auth, timeout and rate limit), else None."""
    if response.error_class != "client_error" or not response.attempts:
        return None
    status = response.attempts[-1].status
    return status if isinstance(status, int) and 400 <= status < 500 else None


Send = Callable[[frozenset[str]], Awaitable[GenerationResponse]]  # the request, carrying just these fields


class FieldProbe:
    """Per runner: which optional fields its server took (True), refused (False) or has not answered (absent)."""

    def __init__(self, owner: object) -> None:
        self.owner = owner  # named in the warning: the runner (its endpoint)
        self.state: dict[str, bool] = {}
        self._lock = asyncio.Lock()

    def _unknown(self, fields: Iterable[OptionalField]) -> bool:
        return any(f.name not in self.state for f in fields)

    def _kept(self, fields: Iterable[OptionalField]) -> list[OptionalField]:
        return [f for f in fields if self.state.get(f.name, True)]

    async def send(self, fields: Iterable[OptionalField], send: Send) -> GenerationResponse:
        """Send a request that would carry ``fields``, leaving out those the server refused (see the module doc)."""
        fields = list(fields)
        if self._unknown(fields):
            async with self._lock:  # the first request finds out; the others wait for it
                if self._unknown(fields):
                    return await self._probe(fields, send)
        return await send(frozenset(f.name for f in self._kept(fields)))

    async def _probe(self, fields: list[OptionalField], send: Send) -> GenerationResponse:
        kept = self._kept(fields)
        unnamed_tried = False
        while True:
            response = await send(frozenset(f.name for f in kept))
            if response.ok:
                for f in kept:
                    self.state.setdefault(f.name, True)
                return response
            named = [f for f in kept if f.refused_by_name(response)]
            if named:
                self._refuse(named, response)
                kept = [f for f in kept if f not in named]
                continue
            suspects = [f for f in kept if f.unnamed_refusal and f.name not in self.state]
            if unnamed_tried or not suspects or _client_status(response) is None:
                return response
            unnamed_tried = True
            retry = await send(frozenset(f.name for f in kept if f not in suspects))
            if not retry.ok:  # refused without them too: not theirs to answer for
                return retry
            self._refuse(suspects, response)
            for f in kept:
                self.state.setdefault(f.name, True)
            return retry

    def _refuse(self, fields: list[OptionalField], response: GenerationResponse) -> None:
        for f in fields:
            self.state[f.name] = False
            log.warning("%r refused %s (%s); %s", self.owner, f.name, response.error_detail, f.left_out)
