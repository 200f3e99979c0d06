"""The response-cache key: what makes two requests the same question to the same model.

``key = sha256( canonical_json({v, backend_type, endpoint, request}) ).hexdigest()`` where
``request`` is :func:`request_payload` — model id, mode, messages, prompt and every field of
:class:`GenerationParams`. Nothing about transport goes in (api keys, headers, timeouts, retry
counts): they change how we ask, not what the model answers. Leaving the model or endpoint out
would hand model A's answers to model B, so both are always in.

Canonical JSON = sorted keys, no whitespace, ``ensure_ascii=False``, encoded as UTF-8; tuples
become lists; float-typed params are coerced to float so ``temperature=0`` and ``0.0`` agree.

A request's ``output_schema`` (constrained decoding, ``runners.structured``) is in only when set, for
the same reason: unconstrained requests keep their keys.

``think`` is in the key whatever its value (on, off, a level, or unset). Params added after the
first key layout (:data:`SENT_WHEN_SET`: Ollama's ``num_ctx``, a judge's ``top_logprobs``) are in only
when set: unset, nothing is sent, so the request and its key are what they were before the param existed and the
answers already cached stay valid; set, the key differs (a larger context can change the answer).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from runners.base import GenerationRequest

# Bump when the payload layout changes, so old cache entries simply stop matching.
CACHE_KEY_VERSION = 1
# GenerationParams fields added after version 1: in the request record only when not None.
SENT_WHEN_SET = frozenset({"num_ctx", "top_logprobs"})


def canonical_json(obj: Any) -> str:
    """Deterministic JSON: equal values give equal strings (NaN/inf are rejected)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@functools.lru_cache(maxsize=256)  # a run has a handful of endpoints and asks for each once per unit
def normalize_endpoint(endpoint_identity: str) -> str:
    """Strip what does not identify the server from a URL: credentials, query, trailing ``/``.

    ``https://user:pw@Host/v1/?key=..`` → ``https://host/v1``. The query string is dropped
    because some providers carry keys there. Non-URL identities pass through unchanged.
    """
    parts = urlsplit(endpoint_identity)
    if not (parts.scheme and parts.netloc):
        return endpoint_identity
    host = parts.netloc.rsplit("@", 1)[-1].lower()
    return urlunsplit((parts.scheme.lower(), host, parts.path.rstrip("/"), "", ""))


def request_payload(request: GenerationRequest) -> dict[str, Any]:
    """What is sent to the model: input plus all generation params (never keys or headers).

    This is also what the run store keeps as ``request_json``. ``prompt`` and ``messages`` are
    both included whatever the mode: a request carrying an unused field can only cause a cache
    miss, never a wrong hit.
    """
    try:
        params = {k: list(v) if isinstance(v, list) else v for k, v in _params_record(request.params).items()}
    except TypeError:  # a params object holding a list or dict is not hashable: build it uncached
        params = _params_record.__wrapped__(request.params)
    payload: dict[str, Any] = {
        "model": request.model,
        "mode": request.mode,
        "messages": [dict(m) for m in request.messages],
        "prompt": request.prompt,
        "params": params,
    }
    if request.output_schema is not None:  # a constrained answer is another answer; unset, the key is unchanged
        payload["output_schema"] = request.output_schema
    return payload


@functools.lru_cache(maxsize=1024)  # every unit of a model shares one params object: build its record once
def _params_record(params: Any) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for f in dataclasses.fields(params):
        value = getattr(params, f.name)
        if value is None and f.name in SENT_WHEN_SET:
            continue
        if isinstance(value, int) and not isinstance(value, bool) and "float" in str(f.type):
            value = float(value)
        elif isinstance(value, tuple):
            value = list(value)
        record[f.name] = value
    return record


def cache_key(backend_type: str, endpoint_identity: str, request: GenerationRequest) -> str:
    """sha256 hex of everything that shapes the answer.

    ``endpoint_identity`` is the backend's ``base_url`` for remote servers. For the managed
    llama.cpp backend the URL is a random free port each run, so the caller passes a stable
    identity instead — ``"llamacpp://<sha256 of the GGUF file>"`` — so that the same weights
    hit the same cache entries across runs.
    """
    return cache_key_of_json(backend_type, endpoint_identity, canonical_json(request_payload(request)))


def cache_key_of_json(backend_type: str, endpoint_identity: str, request_json: str) -> str:
    """:func:`cache_key` from the request's canonical JSON (the run store's ``request_json``).

    The driver serialises each request once and derives the key from that text: the canonical
    JSON of ``{v, backend_type, endpoint, request}`` is assembled around it in sorted-key order
    (``backend_type`` < ``endpoint`` < ``request`` < ``v``), byte for byte what serialising the
    whole payload gives.
    """
    text = f'{_key_head(backend_type, endpoint_identity)},"request":{request_json},"v":{CACHE_KEY_VERSION}}}'
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=256)
def _key_head(backend_type: str, endpoint_identity: str) -> str:
    """The key text before ``"request"``: ``{"backend_type":…,"endpoint":…`` (no closing brace)."""
    return canonical_json({"backend_type": backend_type, "endpoint": normalize_endpoint(endpoint_identity)})[:-1]
