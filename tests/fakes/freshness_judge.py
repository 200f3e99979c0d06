"""A FAKE freshness judge that knows which gold points are drifted, for ``pool.freshness`` tests.

It reads the gold point between the fence lines of the request and answers the ``freshness`` contract's
JSON: ``drifted`` (naming a guideline) for the points it was told, ``current`` for the rest; points listed
in ``unparseable`` get prose without a verdict, every time. It counts asks per point (a re-ask carries the
same fenced point, and is counted under its point too) and, given ``hold_after``, answers that many requests
and holds every later one until :meth:`release`: a test that kills the audit after that many results never
races it to its end.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import Counter
from collections.abc import Iterable
from typing import Any

from aiohttp import web

from judge.contracts.framing import ANSWER_CLOSE, ANSWER_OPEN

from . import Behavior, ok
from .openai_fake import FakeOpenAIServer

_FENCED = re.compile(re.escape(ANSWER_OPEN) + r"\n(.*?)\n" + re.escape(ANSWER_CLOSE), re.S)
GUIDELINE = "高血压指南 2024"


class FreshnessJudge:
    """``behave`` for :class:`FakeOpenAIServer`: the verdicts of a judge that knows the drifted points."""

    def __init__(self, drifted: Iterable[str], unparseable: Iterable[str] = ()) -> None:
        self.drifted = set(drifted)
        self.unparseable = set(unparseable)
        self.asked: Counter[str] = Counter()  # requests per gold point
        self.models: Counter[str] = Counter()  # requests per judge model id

    def __call__(self, index: int, payload: dict[str, Any]) -> Behavior:
        messages = payload.get("messages") or []
        self.models[str(payload.get("model"))] += 1
        prompt = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        found = _FENCED.search(prompt)
        point = found.group(1) if found else ""
        self.asked[point] += 1
        if point in self.unparseable:
            return ok("这条要点我需要再想想。")
        if point in self.drifted:
            verdict = {"verdict": "drifted", "current_guideline": GUIDELINE, "note": "新指南已收紧"}
        else:
            verdict = {"verdict": "current", "current_guideline": "unknown", "note": "仍然成立"}
        return ok(json.dumps(verdict, ensure_ascii=False))


class HeldFreshnessServer(FakeOpenAIServer):
    """The fake server, answering ``hold_after`` requests and holding the rest until :meth:`release`
    (callable from the test's thread: the fake's loop runs in another)."""

    def __init__(self, hold_after: int, **fields: Any) -> None:
        super().__init__(**fields)
        self.hold_after = hold_after
        self._released = threading.Event()
        self.held = 0  # requests waiting now (a killed client's request stops waiting: aiohttp cancels it)

    def release(self) -> None:
        self._released.set()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.held += 1
        try:
            while self.request_count >= self.hold_after and not self._released.is_set() and not self._stopping.is_set():
                await asyncio.sleep(0.02)
        finally:
            self.held -= 1
        return await super().handle(request)
