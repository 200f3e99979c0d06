"""A client for any OpenAI-compatible ``POST {base_url}/embeddings`` endpoint (OpenAI, vLLM, TEI,
llama.cpp's server with ``embedding: true``, SiliconFlow, ...).

Request ``{"model": model, "input": [text, ...]}``; response ``{"data": [{"index": i, "embedding":
[float, ...]}, ...]}``, read in ``index`` order. Texts go in batches of ``batch_size``, one batch
at a time. Transport, retries, the body cap and key handling are ``runners.retry.JsonEndpoint``'s
(the same rules as chat calls: 429/5xx/connection/timeouts retried with backoff, other 4xx not);
the key is read at call time from the environment variable *named* by ``api_key_env``, and never
appears in a message. Unlike a generation runner, a failed batch raises ``EmbeddingsError``: an
encoder with a hole in its output is of no use to anyone.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any

from runners.base import GenerationResponse
from runners.retry import BadResponse, JsonEndpoint, RetryPolicy, Sleep

DEFAULT_BATCH_SIZE = 32  # 32 × 4096 dims × ~20 bytes of JSON per float ≈ 2.6 MB, under the 8 MiB body cap


class EmbeddingsError(RuntimeError):
    """An embeddings call that failed for good; the message names the URL, the HTTP status or error class."""


def parse_embeddings(obj: Any, expected: int) -> list[list[float]]:
    """The vectors of one response body in input order; BadResponse when its shape is wrong."""
    if not isinstance(obj, dict) or not isinstance(obj.get("data"), list):
        keys = ", ".join(sorted(obj)[:8]) if isinstance(obj, dict) else type(obj).__name__
        raise BadResponse(f"no data list in the body ({keys})")
    entries = obj["data"]
    if len(entries) != expected:
        raise BadResponse(f"{len(entries)} embeddings for {expected} inputs")
    by_index: dict[int, list[float]] = {}
    for position, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("embedding"), list):
            raise BadResponse(f"data[{position}] has no embedding list")
        index = entry.get("index", position)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < expected or index in by_index:
            raise BadResponse(f"data[{position}].index {index!r} is not a distinct index below {expected}")
        vector = entry["embedding"]
        if vector and all(isinstance(x, list) for x in vector):
            raise BadResponse(
                f"data[{position}].embedding is {len(vector)} per-token vectors, not one pooled vector: "
                "the server does no pooling for this model (llama.cpp: serve it with a pooling type)"
            )
        if not vector or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in vector
        ):
            raise BadResponse(f"data[{position}].embedding is empty or holds a non-finite or non-numeric value")
        by_index[index] = [float(x) for x in vector]
    vectors = [by_index[i] for i in range(expected)]
    if len({len(v) for v in vectors}) > 1:
        raise BadResponse(f"embeddings of different lengths {sorted({len(v) for v in vectors})} in one response")
    return vectors


class EmbeddingsClient:
    """One embeddings endpoint and model; ``identity`` names both, for cache keys and provenance."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        timeout_s: float = 120.0,
        policy: RetryPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if not model.strip():
            raise ValueError("model must name the embedding model the endpoint serves")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = model
        self.batch_size = batch_size
        self._endpoint = JsonEndpoint(
            base_url, api_key_env=api_key_env, timeout_s=timeout_s, policy=policy or RetryPolicy(), sleep=sleep
        )

    @property
    def url(self) -> str:
        return self._endpoint.base_url + "/embeddings"

    @property
    def identity(self) -> str:
        """``model@base_url``: what shapes a vector (the key and timeouts do not)."""
        return f"{self.model}@{self._endpoint.base_url}"

    def __repr__(self) -> str:
        return f"EmbeddingsClient(url={self.url!r}, model={self.model!r}, api_key_env={self._endpoint.api_key_env!r})"

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order; raises EmbeddingsError naming the URL when a batch fails."""
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise TypeError("texts must be a list of strings")
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            vectors.extend(await self._batch(list(texts[start : start + self.batch_size]), start))
        if len({len(v) for v in vectors}) > 1:
            raise EmbeddingsError(
                f"POST {self.url}: batches returned vectors of different lengths; is the model fixed?"
            )
        return vectors

    async def _batch(self, batch: list[str], start: int) -> list[list[float]]:
        parsed: list[list[list[float]]] = []

        def parse(obj: Any) -> GenerationResponse:
            # JsonEndpoint's retry loop is typed around generation responses: the vectors travel
            # beside the response, which carries only the call's accounting.
            parsed.append(parse_embeddings(obj, len(batch)))
            return GenerationResponse(
                text="", finish_reason=None, prompt_tokens=None, completion_tokens=None, latency_s=0.0
            )

        response = await self._endpoint.post("/embeddings", {"model": self.model, "input": batch}, parse)
        if not response.ok or not parsed:
            raise EmbeddingsError(
                f"POST {self.url} (model {self.model!r}, texts {start}..{start + len(batch) - 1}) failed: "
                f"{response.error_class}: {response.error_detail}"
            )
        return parsed[-1]

    async def aclose(self) -> None:
        await self._endpoint.aclose()


def embed_texts(
    base_url: str,
    model: str,
    texts: Sequence[str],
    *,
    api_key_env: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    timeout_s: float = 120.0,
) -> list[list[float]]:
    """Synchronous one-shot: a fresh client and event loop, every text embedded, the session closed."""

    async def run() -> list[list[float]]:
        client = EmbeddingsClient(base_url, model, api_key_env=api_key_env, batch_size=batch_size, timeout_s=timeout_s)
        try:
            return await client.embed(texts)
        finally:
            await client.aclose()

    return asyncio.run(run())
