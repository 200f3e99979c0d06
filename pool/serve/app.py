"""The router's HTTP face: OpenAI-compatible chat completions, models, health and metrics.

``POST /v1/chat/completions`` picks the target (a bucket hint — the ``x-medpool-bucket`` header or
``metadata.bucket`` in the body: a bucket id, a family or ``default`` — else the classifier's guess
up the fallback chain), forwards to the target's model (the client's fields win; generation
settings it leaves out are the pool's for that model; ``model`` becomes the upstream's id), goes
down the route's chain when an upstream is dead, and answers with ``x-medpool-route``. Every
request gets a response: an answer, the upstream's own 4xx, or an OpenAI-style error saying why.

The state in service is one immutable :class:`~pool.serve.state.RouterState`; :class:`Serving`
swaps it for a new one when the manifest file changes (checked every ``reload_interval`` seconds),
and keeps the old one when the new file cannot be used. A request reads the state once, at its
start, so a swap never changes a request halfway.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from pool.serve.metrics import Metrics
from pool.serve.state import RouterState, StateError
from pool.serve.upstream import HOP_HEADER, Dead, Forwarder, openai_error
from routing.serve.routes import resolve_guess, route_header
from routing.serve.texts import request_text

BUCKET_HEADER = "x-medpool-bucket"
DEFAULT_MAX_BODY = 4 * 1024 * 1024
TOKEN_ENV = "MEDPOOL_ROUTER_TOKEN"


@dataclass
class Serving:
    """The state in service, the manifest file's last seen signature, and how to rebuild the state."""

    state: RouterState
    rebuild: Callable[[], RouterState]
    metrics: Metrics = field(default_factory=Metrics)
    signature: tuple[int, int, int] | None = None

    def __post_init__(self) -> None:
        self.signature = self._signature()

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            stat = self.state.manifest_path.stat()
        except OSError:
            return None
        return (stat.st_mtime_ns, stat.st_size, stat.st_ino)

    async def check(self) -> bool:
        """Reload when the manifest file changed; True when a new state went into service."""
        signature = self._signature()
        if signature is None or signature == self.signature:
            return False
        self.signature = signature
        try:
            state = await asyncio.to_thread(self.rebuild)
        except (StateError, OSError, ValueError) as exc:
            self.metrics.reloads["failed"] += 1
            print(
                f"routing.serve: manifest reload failed, still serving {self.state.manifest_sha[:12]}: {exc}",
                file=sys.stderr,
            )
            return False
        if state.manifest_sha == self.state.manifest_sha:
            return False
        self.metrics.reloads["ok"] += 1
        print(
            f"routing.serve: now serving manifest {state.manifest_sha[:12]} (was {self.state.manifest_sha[:12]})",
            file=sys.stderr,
        )
        self.state = state
        return True

    async def watch(self, interval_s: float) -> None:
        while True:
            await asyncio.sleep(interval_s)
            await self.check()


SERVING = web.AppKey("serving", Serving)
FORWARDER = web.AppKey("forwarder", Forwarder)
SETTINGS = web.AppKey("settings", dict)


def _authorised(request: web.Request) -> bool:
    token = request.app[SETTINGS]["token"]
    if not token:
        return True
    given = request.headers.get("Authorization", "")
    return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())


def _bad(message: str, param: str | None = None, status: int = 400) -> web.Response:
    return openai_error(status, message, "invalid_request_error", param)


def checked_body(raw: bytes) -> tuple[dict[str, Any] | None, web.Response | None]:
    """(the request body, None) or (None, the 400 saying what is wrong with it)."""
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, _bad(f"the body is not JSON ({exc}); send a chat completion request object")
    if not isinstance(body, dict):
        return None, _bad(f"the body is a JSON {type(body).__name__}; send an object with a messages list")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return None, _bad("messages: must be a non-empty list of {role, content} objects", "messages")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return None, _bad(f"messages[{i}]: must be an object with a string role", f"messages[{i}]")
    if "stream" in body and not isinstance(body["stream"], bool):
        return None, _bad("stream: must be true or false", "stream")
    metadata = body.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        return None, _bad("metadata: must be an object", "metadata")
    return body, None


def upstream_payload(body: Mapping[str, Any], model_id: str, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The body sent upstream: the client's, with the upstream's model id, without the bucket hint,
    and the pool's generation settings for that model where the client gave none."""
    payload = {**defaults, **body, "model": model_id}
    metadata = payload.get("metadata")
    if isinstance(metadata, dict) and "bucket" in metadata:
        rest = {k: v for k, v in metadata.items() if k != "bucket"}
        if rest:
            payload["metadata"] = rest
        else:
            del payload["metadata"]
    return payload


async def chat_completions(request: web.Request) -> web.StreamResponse:
    started = time.perf_counter()
    serving = request.app[SERVING]
    state = serving.state  # this request's state, whatever reloads happen meanwhile
    bucket, model, by, upstream_s = "-", "-", "-", 0.0
    response: web.StreamResponse
    try:
        response, bucket, model, by, upstream_s = await _route_and_forward(request, state)
    except web.HTTPRequestEntityTooLarge:
        limit = request.app[SETTINGS]["max_body"]
        response = _bad(f"the body is larger than the router's limit of {limit} bytes (--max-body-bytes)", status=413)
    serving.metrics.request(bucket, model, by, response.status, time.perf_counter() - started, upstream_s)
    return response


async def _route_and_forward(
    request: web.Request, state: RouterState
) -> tuple[web.StreamResponse, str, str, str, float]:
    if not _authorised(request):
        return (
            openai_error(
                401,
                "missing or wrong bearer token (Authorization: Bearer <the router's token>)",
                "authentication_error",
            ),
            "-",
            "-",
            "-",
            0.0,
        )
    if request.headers.get(HOP_HEADER):
        return (
            openai_error(
                508,
                "this request already passed through a medpool router: a pool entry of the router "
                "points back at a router; remove it from the pool the router serves",
                "routing_loop",
            ),
            "-",
            "-",
            "-",
            0.0,
        )
    body, problem = checked_body(await request.read())
    if problem is not None or body is None:
        return problem or _bad("empty body"), "-", "-", "-", 0.0
    hint = request.headers.get(BUCKET_HEADER) or ((body.get("metadata") or {}).get("bucket"))
    if hint is not None:
        if not isinstance(hint, str) or not state.routes.knows(hint):
            return (
                _bad(
                    f"bucket hint {hint!r} is not a bucket id, family or 'default' of the manifest in service "
                    "(the keys of its buckets: and families:)",
                    "metadata.bucket",
                ),
                "-",
                "-",
                "hint",
                0.0,
            )
        target, by = hint, "hint"
    elif state.knowledge.classifier is not None:
        target, by = resolve_guess(state.knowledge.classifier.guess(request_text(body["messages"])), state.thresholds)
    else:
        target, by = "default", "fallback"
    route = state.routes.route(target)
    forwarder = request.app[FORWARDER]
    chain = forwarder.order(route.chain, state.upstreams)
    if not chain:
        return (
            openai_error(
                503,
                f"no servable model for {route.target!r}: the manifest's models for it are not in the "
                "pool file, or not OpenAI-compatible (see GET /health notes)",
                "no_route",
            ),
            route.target,
            route.model or "-",
            by,
            0.0,
        )
    waited, last = 0.0, None
    for upstream in chain:
        header = route_header(route, upstream.model, by, state.manifest_sha)
        payload = upstream_payload(body, upstream.model_id, upstream.defaults)
        try:
            response, spent = await forwarder.forward(request, upstream, payload, header, body.get("stream") is True)
            return response, route.target, upstream.model, by, waited + spent
        except Dead as dead:
            request.app[SERVING].metrics.failure(upstream.model, dead.reason)
            last = dead
    assert last is not None
    error = (
        dict(last.error)
        if last.error
        else {"message": last.message, "type": "upstream_error", "param": None, "code": last.status}
    )
    error["message"] = f"every model for {route.target!r} failed; last: {last.message}" + (
        f" ({error['message']})" if last.error and error.get("message") else ""
    )
    return (
        web.json_response(
            {"error": error},
            status=last.status,
            headers={"x-medpool-route": route_header(route, chain[-1].model, by, state.manifest_sha)},
        ),
        route.target,
        chain[-1].model,
        by,
        waited,
    )


async def models(request: web.Request) -> web.Response:
    if not _authorised(request):
        return openai_error(401, "missing or wrong bearer token", "authentication_error")
    name = request.app[SETTINGS]["model_name"]
    return web.json_response({"object": "list", "data": [{"id": name, "object": "model", "owned_by": "medpool"}]})


async def health(request: web.Request) -> web.Response:
    state = request.app[SERVING].state
    now = time.monotonic()
    dead = request.app[FORWARDER].dead_until
    return web.json_response(
        {
            "status": "ok",
            "manifest": str(state.manifest_path),
            "manifest_sha256": state.manifest_sha,
            "run": str(state.knowledge.run_dir),
            "items": len(state.knowledge.texts),
            "thresholds": dict(zip(("bucket", "system", "family"), state.thresholds.as_tuple(), strict=True)),
            "expected_score": state.expected_score,
            "default_model": state.routes.default.model,
            "models": {m: "cooling" if dead.get(m, 0) > now else "up" for m in sorted(state.upstreams)},
            "notes": list(state.notes),
        }
    )


async def metrics(request: web.Request) -> web.Response:
    if not _authorised(request):
        return openai_error(401, "missing or wrong bearer token", "authentication_error")
    serving = request.app[SERVING]
    return web.Response(
        text=serving.metrics.render(serving.state.manifest_sha),
        content_type="text/plain",
        charset="utf-8",
        headers={"X-Content-Type-Options": "nosniff"},
    )


def make_app(
    serving: Serving,
    *,
    model_name: str = "medpool-router",
    max_body: int = DEFAULT_MAX_BODY,
    reload_interval: float | None = 2.0,
    token: str | None = None,
) -> web.Application:
    """The router application; ``token`` defaults to ``$MEDPOOL_ROUTER_TOKEN`` (unset or empty: no client auth)."""
    app = web.Application(client_max_size=max_body)
    app[SERVING] = serving
    app[SETTINGS] = {
        "model_name": model_name,
        "max_body": max_body,
        "token": token if token is not None else os.environ.get(TOKEN_ENV) or None,
    }
    app.add_routes(
        [
            web.post("/v1/chat/completions", chat_completions),
            web.get("/v1/models", models),
            web.get("/health", health),
            web.get("/metrics", metrics),
        ]
    )

    async def lifecycle(app: web.Application) -> Any:
        app[FORWARDER] = Forwarder.open()
        watcher = asyncio.create_task(serving.watch(reload_interval)) if reload_interval else None
        yield
        if watcher is not None:
            watcher.cancel()
        await app[FORWARDER].close()

    app.cleanup_ctx.append(lifecycle)
    return app
