"""A FAKE OpenAI-compatible embeddings server (``POST /v1/embeddings``) for tests; not a model.

Each text's vector is ``vectors[text]`` when given, else ``[len(text), code-point sum mod 97, 1.0]``
(deterministic). ``reverse_order`` sends the data list back to front, as a server may, so a client
must read the ``index`` fields. Faults come from the shared script (see ``tests.fakes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from . import Behavior, FakeServer


def default_vector(text: str) -> list[float]:
    return [float(len(text)), float(sum(map(ord, text)) % 97), 1.0]


@dataclass
class FakeEmbeddingsServer(FakeServer):
    vectors: dict[str, list[float]] = field(default_factory=dict)
    reverse_order: bool = False

    @property
    def base_url(self) -> str:
        return self.root_url + "/v1"

    def routes(self) -> list[web.RouteDef]:
        return [web.post("/v1/embeddings", self.handle)]

    def answer(self, path: str, payload: dict[str, Any], behavior: Behavior) -> dict[str, Any]:
        texts = payload.get("input") or []
        data = [
            {"object": "embedding", "index": index, "embedding": self.vectors.get(text) or default_vector(text)}
            for index, text in enumerate(texts)
        ]
        if self.reverse_order:
            data.reverse()
        return {
            "object": "list",
            "data": data,
            "model": payload.get("model"),
            "usage": {"prompt_tokens": sum(map(len, texts)), "total_tokens": sum(map(len, texts))},
        }
