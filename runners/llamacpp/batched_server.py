"""An OpenAI-compatible server over :mod:`runners.llamacpp.batching`: several requests per model at once.

``python -m runners.llamacpp.batched_server --config_file CONFIG.json`` reads ``host``, ``port``,
``models`` (each a ``model`` path and its ``model_alias``, as ``python -m llama_cpp.server`` takes
them) and ``settings``: the backend's :class:`~runners.llamacpp.settings.LlamaCppSettings` whole
(context, threads, slots: what :class:`~runners.llamacpp.batching.BatchedModel` reads). It
serves ``GET /v1/models``, ``POST /v1/chat/completions`` and ``POST /v1/completions`` (no
streaming). Every model stays loaded; one engine thread steps them in turn, so the models never
compete for the cores.

Request fields and their defaults are llama-cpp-python's server's (``max_tokens`` 16,
``temperature`` 0.8, ``top_p`` 0.95, ``top_k`` 40, ``min_p`` 0.05, ``repeat_penalty`` 1.1...).
A request's ``grammar`` (GBNF text, as llama-cpp-python's server takes it) constrains its answer.
Token logprobs come back in OpenAI's shape when asked (chat: ``logprobs: true`` and ``top_logprobs:
k``; completion: ``logprobs: k``; k at most 20), computed from each step's logits
(:mod:`runners.llamacpp.batching`); otherwise ``logprobs`` is null.
Errors: an unknown model, a malformed body, a grammar that does not parse or a prompt longer than a
slot's context is a 400 with a message; a client that disconnects frees its slot at the next step.

Each finished request is logged as a ``llama_perf_context_print`` block (the format
:func:`runners.llamacpp.server.parse_server_timings` reads), in the order requests *finish*. Its
times are the wall times of the steps the request took part in, which it shared with the others.
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import dataclasses
import json
import sys
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

from runners.llamacpp.batching import (
    BatchedModel,
    Completion,
    Job,
    PromptTooLong,
    Sampling,
)
from runners.llamacpp.settings import LlamaCppSettings

_LOG_WARN = 3  # ggml_log_level: 2 info, 3 warn, 4 error


class BadRequest(ValueError):
    """The request cannot be served as sent (HTTP 400)."""


class AliasedModel:
    """One alias: the batched model and how to turn a request into tokens."""

    def __init__(self, alias: str, model: BatchedModel) -> None:
        self.alias = alias
        self.model = model
        template = model.metadata("tokenizer.chat_template")
        self._chat = None
        if template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            self._chat = Jinja2ChatFormatter(
                template=template, eos_token=model.token_text(model.eos), bos_token=model.token_text(model.bos)
            )

    def chat_prompt(self, messages: Sequence[Mapping[str, Any]]) -> tuple[list[int], tuple[str, ...]]:
        if self._chat is None:
            raise BadRequest(f"model {self.alias!r} has no chat template in its GGUF: use /v1/completions")
        try:
            rendered = self._chat(messages=list(messages))
        except Exception as exc:  # the template's own raise_exception, or a message it cannot render
            raise BadRequest(f"model {self.alias!r}: its chat template rejected the messages: {exc}") from exc
        return self.model.tokenize(rendered.prompt, add_special=False), tuple(rendered.stop or ())

    def completion_prompt(self, prompt: str) -> list[int]:
        return self.model.tokenize(prompt, add_special=True)


class Engine:
    """The thread that steps every model; requests come in from the event loop."""

    def __init__(self, models: Mapping[str, AliasedModel]) -> None:
        self.models = dict(models)
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="llama-batching", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout=30)

    def submit(self, served: AliasedModel, job: Job) -> None:
        served.model.submit(job)
        self._wake.set()

    def _run(self) -> None:
        models = [s.model for s in self.models.values()]
        while not self._stopping:
            self._wake.clear()
            busy = False
            for model in models:
                try:
                    busy = model.step() or busy
                except Exception as exc:  # a broken step fails its requests, not the server
                    print(f"engine step failed: {exc!r}", file=sys.stderr, flush=True)
                    model.fail_all(exc)
            if not busy:
                self._wake.wait(timeout=1.0)


def _number(body: Mapping[str, Any], key: str, default: float, kind: type = float) -> Any:
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise BadRequest(f"{key} must be {'an integer' if kind is int else 'a number'}, got {value!r}")
    return kind(value)


def _stops(body: Mapping[str, Any]) -> tuple[str, ...]:
    stop = body.get("stop")
    if stop is None:
        return ()
    if isinstance(stop, str):
        return (stop,) if stop else ()
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return tuple(s for s in stop if s)
    raise BadRequest(f"stop must be a string or a list of strings, got {stop!r}")


def _sampling(body: Mapping[str, Any]) -> Sampling:
    """The request's sampling fields; each one left out (or null) takes :class:`Sampling`'s default."""
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise BadRequest(f"seed must be an integer, got {seed!r}")
    numbers = {
        f.name: _number(body, f.name, f.default, type(f.default))
        for f in dataclasses.fields(Sampling)
        if f.name != "seed"
    }
    return Sampling(**numbers, seed=None if seed is None else seed & 0xFFFFFFFF)


MAX_TOP_LOGPROBS = 20  # OpenAI's limit for top_logprobs


def _top_logprobs(body: Mapping[str, Any], chat: bool) -> int | None:
    """Alternatives per token the request asks for (OpenAI's fields: chat ``logprobs: true`` with
    ``top_logprobs: k``, completion ``logprobs: k``); None when it asks for no logprobs."""
    if chat:
        if not body.get("logprobs"):
            return None
        k = _number(body, "top_logprobs", 0, int)
    else:
        if body.get("logprobs") is None:
            return None
        k = _number(body, "logprobs", 0, int)
    if not 0 <= k <= MAX_TOP_LOGPROBS:
        raise BadRequest(f"top_logprobs must be 0..{MAX_TOP_LOGPROBS}, got {k}")
    return k


def _logprobs_body(c: Completion, chat: bool) -> dict[str, Any] | None:
    """The completion's token logprobs in the OpenAI shape of its endpoint (None when not asked)."""
    if c.logprobs is None:
        return None
    if chat:
        return {
            "content": [
                {
                    "token": token,
                    "logprob": logprob,
                    "top_logprobs": [{"token": t, "logprob": lp} for t, lp in top],
                }
                for token, logprob, top in c.logprobs
            ]
        }
    offsets, at = [], 0
    for token, _, _ in c.logprobs:
        offsets.append(at)
        at += len(token)
    return {
        "tokens": [token for token, _, _ in c.logprobs],
        "token_logprobs": [logprob for _, logprob, _ in c.logprobs],
        "top_logprobs": [dict(top) for _, _, top in c.logprobs],
        "text_offset": offsets,
    }


def _log_timing(alias: str, c: Completion) -> None:
    """One block in llama.cpp's own format, so the server log's timings parse the same way."""
    print(
        f"request done: model={alias} prompt_tokens={c.prompt_tokens} "
        f"completion_tokens={c.completion_tokens} finish_reason={c.finish_reason}\n"
        f"llama_perf_context_print: prompt eval time = {c.prompt_ms:10.2f} ms / {c.prompt_tokens_evaluated:5d} tokens\n"
        f"llama_perf_context_print:        eval time = {c.predicted_ms:10.2f} ms / {c.completion_tokens:5d} runs\n"
        f"llama_perf_context_print:       total time = {c.prompt_ms + c.predicted_ms:10.2f} ms / "
        f"{c.prompt_tokens + c.completion_tokens:5d} tokens",
        flush=True,
    )


def make_app(engine: Engine) -> web.Application:
    async def list_models(_: web.Request) -> web.Response:
        data = [{"id": alias, "object": "model", "owned_by": "me", "permissions": []} for alias in engine.models]
        return web.json_response({"object": "list", "data": data})

    async def generate(request: web.Request, chat: bool) -> web.Response:
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            return _error(400, "the body is not JSON")
        try:
            if not isinstance(body, dict):
                raise BadRequest("the body must be a JSON object")
            if body.get("stream"):
                raise BadRequest("streaming is not supported by this server; send stream: false")
            alias = body.get("model")
            if alias is None and len(engine.models) == 1:
                alias = next(iter(engine.models))
            served = engine.models.get(alias) if isinstance(alias, str) else None
            if served is None:
                raise BadRequest(f"unknown model {alias!r}; this server has {sorted(engine.models)}")
            stops = _stops(body)
            if chat:
                messages = body.get("messages")
                if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
                    raise BadRequest("messages must be a list of {role, content} objects")
                prompt, template_stops = served.chat_prompt(messages)
                stops = stops + template_stops
            else:
                text = body.get("prompt")
                if not isinstance(text, str):
                    raise BadRequest("prompt must be a string")
                prompt = served.completion_prompt(text)
            max_tokens = _number(body, "max_tokens", 16, int)
            if max_tokens < 1:
                max_tokens = served.model.n_ctx
            sampling = _sampling(body)
            grammar = body.get("grammar")
            if grammar is not None and (not isinstance(grammar, str) or not grammar.strip()):
                raise BadRequest(f"grammar must be GBNF text, got {type(grammar).__name__}")
            top_logprobs = _top_logprobs(body, chat)
        except BadRequest as exc:
            return _error(400, str(exc))

        loop = asyncio.get_running_loop()
        future: asyncio.Future[Completion | BaseException] = loop.create_future()

        def done(result: Completion | BaseException) -> None:
            loop.call_soon_threadsafe(lambda: future.done() or future.set_result(result))

        job = Job(
            prompt=prompt,
            max_tokens=max_tokens,
            sampling=sampling,
            stop=stops,
            done=done,
            grammar=grammar,
            top_logprobs=top_logprobs,
        )
        try:
            engine.submit(served, job)
        except (PromptTooLong, ValueError) as exc:
            return _error(400, str(exc))
        try:
            result = await future
        except asyncio.CancelledError:
            job.cancelled = True  # the client went away: free the slot at the next step
            raise
        if isinstance(result, BaseException):
            return _error(500, f"generation failed: {result}")
        _log_timing(served.alias, result)
        return web.json_response(_response_body(served.alias, result, chat))

    async def chat_completions(request: web.Request) -> web.Response:
        return await generate(request, chat=True)

    async def completions(request: web.Request) -> web.Response:
        return await generate(request, chat=False)

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_get("/v1/models", list_models)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_post("/v1/completions", completions)
    return app


def _response_body(alias: str, c: Completion, chat: bool) -> dict[str, Any]:
    usage = {
        "prompt_tokens": c.prompt_tokens,
        "completion_tokens": c.completion_tokens,
        "total_tokens": c.prompt_tokens + c.completion_tokens,
    }
    timings = {
        "prompt_n": c.prompt_tokens_evaluated,
        "prompt_ms": c.prompt_ms,
        "predicted_n": c.completion_tokens,
        "predicted_ms": c.predicted_ms,
    }
    if chat:
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": c.text},
            "logprobs": _logprobs_body(c, chat),
            "finish_reason": c.finish_reason,
        }
        kind = "chat.completion"
    else:
        choice = {"index": 0, "text": c.text, "logprobs": _logprobs_body(c, chat), "finish_reason": c.finish_reason}
        kind = "text_completion"
    return {
        "id": f"cmpl-{uuid.uuid4().hex}",
        "object": kind,
        "created": int(time.time()),
        "model": alias,
        "choices": [choice],
        "usage": usage,
        "timings": timings,
    }


def _error(status: int, message: str) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "invalid_request_error", "code": status}}, status=status
    )


_LOG_CALLBACK: Any = None  # kept alive: llama.cpp holds a pointer to it


def _quiet_llama_log() -> None:
    """llama.cpp logs every tensor at load time; keep warnings and errors only."""
    global _LOG_CALLBACK
    import llama_cpp

    @llama_cpp.llama_log_callback
    def callback(level: int, text: bytes, _: ctypes.c_void_p) -> None:
        if level >= _LOG_WARN:
            sys.stderr.write(text.decode("utf-8", "replace"))

    _LOG_CALLBACK = callback
    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))


def load_models(config: Mapping[str, Any]) -> dict[str, AliasedModel]:
    """Every model of the config file, loaded as its ``settings`` say; a per-model option (which only
    llama-cpp-python's server honours) stops the start with its name."""
    settings = LlamaCppSettings.model_validate(config["settings"])
    served: dict[str, AliasedModel] = {}
    for entry in config["models"]:
        options = set(entry) - {"model", "model_alias"}
        if options:
            raise SystemExit(
                f"model {entry.get('model_alias')!r}: {sorted(options)} not supported by the batched "
                "engine (use engine: llama_cpp)"
            )
        alias = entry.get("model_alias") or Path(entry["model"]).stem
        model = BatchedModel(entry["model"], settings)
        served[alias] = AliasedModel(alias, model)
        print(f"loaded {alias} from {entry['model']} ({settings.slots} slots of {model.n_ctx} tokens)", flush=True)
    return served


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m runners.llamacpp.batched_server", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--config_file", required=True, help="JSON: host, port, settings, models[]")
    args = parser.parse_args(argv)
    config = json.loads(Path(args.config_file).read_text(encoding="utf-8"))
    _quiet_llama_log()
    engine = Engine(load_models(config))
    engine.start()
    try:
        web.run_app(
            make_app(engine),
            host=config.get("host", "127.0.0.1"),
            port=int(config["port"]),
            print=None,
            access_log=None,
        )
    finally:
        engine.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
