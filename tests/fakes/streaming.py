"""A FAKE OpenAI-compatible server that streams: ``"stream": true`` gets the echo as server-sent events,
one word per ``data:`` chunk and ``data: [DONE]``; otherwise it is :class:`FakeOpenAIServer`."""

from __future__ import annotations

import json

from aiohttp import web

from tests.fakes import echo_text
from tests.fakes.openai_fake import FakeOpenAIServer


class StreamingFakeOpenAIServer(FakeOpenAIServer):
    async def handle(self, request: web.Request) -> web.StreamResponse:
        payload = await request.json()
        if payload.get("stream") is not True:
            return await super().handle(request)
        self.request_count += 1
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for word in echo_text(payload).split(" "):
            chunk = {
                "object": "chat.completion.chunk",
                "model": payload.get("model"),
                "choices": [{"index": 0, "delta": {"content": word + " "}, "finish_reason": None}],
            }
            await response.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
