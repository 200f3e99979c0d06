"""The router (its CLI, in a subprocess) under faults: a killed upstream, a hung upstream, malformed
requests and a manifest replaced mid-traffic. Every request gets a response — an answer or an
OpenAI-style error — and the router stays up. Upstreams are FAKE: the specialists in this process,
and a held upstream in its own process that a test kills or releases once its requests have arrived."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from bench.harness.router import REPO, first_run, running_router
from bench.harness.specialists import write_suite
from tests.fakes import ThreadedFakes
from tests.fakes.specialists import specialist_behaviour
from tests.fakes.streaming import StreamingFakeOpenAIServer
from tests.processes import eventually


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, dict, Path]]:
    """(run folder, live fake URL, the training questions' key, a work folder)."""
    work = tmp_path_factory.mktemp("router-faults")
    key: dict = {}
    fakes = ThreadedFakes()
    fake = fakes.start(StreamingFakeOpenAIServer(behave=specialist_behaviour(key)))
    key.update(write_suite(work / "train.jsonl", 60, "train"))
    run, _ = first_run(work, fake.base_url)
    yield run, fake.base_url, key, work
    fakes.stop_all()


class Held:
    """The held upstream process: its URL, how many requests it holds, and how to release or kill it."""

    def __init__(self, proc: subprocess.Popen, port: str) -> None:
        self.proc, self.root = proc, f"http://127.0.0.1:{port}"
        self.url = self.root + "/v1"

    async def count(self, session: aiohttp.ClientSession) -> int:
        async with session.get(self.root + "/held") as response:
            return int((await response.json())["held"])

    async def until_holding(self, session: aiohttp.ClientSession, n: int) -> None:
        for _ in range(3000):  # a state to reach, not a speed to check: up to ~30 s on a loaded machine
            if await self.count(session) >= n:
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"the held upstream never held {n} requests")


@contextmanager
def held_upstream(work: Path) -> Iterator[Held]:
    port_file = work / f"held-{time.monotonic_ns()}.port"
    proc = subprocess.Popen([sys.executable, "-m", "tests.fakes.held_upstream", str(port_file)], cwd=REPO)
    try:
        assert eventually(lambda: port_file.exists() or proc.poll() is not None, 30) and proc.poll() is None
        yield Held(proc, port_file.read_text())
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)


def pool_file(
    work: Path, live: str, held: str | None, on_held: tuple[str, ...], timeout_s: float = 60, key_env: str | None = None
) -> Path:
    backends = {"live": {"type": "openai", "base_url": live, **({"api_key_env": key_env} if key_env else {})}}
    if held is not None:
        backends["held"] = {"type": "openai", "base_url": held, "timeout_s": timeout_s, "max_retries": 0}
    models = [
        {"name": m, "backend": "held" if m in on_held else "live", "model": m, "max_tokens": 8}
        for m in ("card", "endo", "gen")
    ]
    path = work / f"pool-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump({"backends": backends, "models": models}), encoding="utf-8")
    return path


async def ask(session: aiohttp.ClientSession, url: str, text: str, **extra: Any) -> tuple[int, str, Any]:
    """(status, x-medpool-route, body) of one chat request."""
    headers = extra.pop("headers", {})
    body = extra.pop("raw", None)
    data = (
        body
        if body is not None
        else json.dumps({"model": "medpool-router", "messages": [{"role": "user", "content": text}], **extra})
    )
    async with session.post(
        url + "/chat/completions", data=data, headers={"Content-Type": "application/json", **headers}
    ) as r:
        raw = await r.read()
        try:
            parsed = json.loads(raw)
        except ValueError:
            parsed = raw.decode(errors="replace")
        return r.status, r.headers.get("x-medpool-route", ""), parsed


def t1_questions(key: dict) -> list[str]:
    return [q for q, item in key.items() if item["task"] == "T1"]


def test_a_killed_upstream_fails_over_to_the_default_for_every_request_in_flight(served) -> None:
    run, live, key, work = served
    with (
        held_upstream(work) as held,
        running_router(run, work, "--pool", str(pool_file(work, live, held.url, ("card",)))) as url,
    ):

        async def scenario() -> list[tuple[int, str, Any]]:
            async with aiohttp.ClientSession() as session:
                asking = [asyncio.create_task(ask(session, url, q)) for q in t1_questions(key)[:8]]
                await held.until_holding(session, 8)
                held.proc.send_signal(signal.SIGKILL)
                answers = await asyncio.gather(*asking)
                answers.append(await ask(session, url, t1_questions(key)[9]))  # after: card is down, gen answers
                return answers

        answers = asyncio.run(scenario())
    assert len(answers) == 9
    for status, route, body in answers:
        assert status == 200, body
        assert "bucket=exam/task/T1" in route and "model=gen" in route and "by=classifier" in route
        assert body["choices"][0]["message"]["content"].startswith("答案")


def test_a_hung_upstream_times_out_to_the_next_model_or_an_error(served) -> None:
    run, live, key, work = served
    with (
        held_upstream(work) as held,
        running_router(run, work, "--pool", str(pool_file(work, live, held.url, ("card", "gen"), timeout_s=1))) as url,
    ):

        async def scenario() -> tuple[Any, ...]:
            async with aiohttp.ClientSession() as session:
                t1 = await ask(session, url, t1_questions(key)[0])  # card hangs, then gen hangs: 504
                t2 = await ask(session, url, "x", headers={"x-medpool-bucket": "exam/task/T2"})  # endo is live
                async with session.get(url.removesuffix("/v1") + "/metrics") as r:
                    metrics = await r.text()
                return t1, t2, metrics

        (status, route, body), t2, metrics = asyncio.run(scenario())
    assert (
        status == 504
        and body["error"]["type"] == "upstream_error"
        and "did not answer within 1 s" in body["error"]["message"]
    )
    assert "every model for 'exam/task/T1' failed" in body["error"]["message"] and "model=gen" in route
    assert t2[0] == 200 and "model=endo" in t2[1] and "by=hint" in t2[1]
    assert 'medpool_router_upstream_failures_total{model="card",reason="timeout"} 1' in metrics
    assert 'medpool_router_errors_total{bucket="exam/task/T1",model="gen",status="504"} 1' in metrics


@pytest.mark.parametrize(
    ("raw", "headers", "status", "says"),
    [
        (b"{not json", {}, 400, "not JSON"),
        (b"[1, 2]", {}, 400, "JSON list"),
        (b'{"model": "m"}', {}, 400, "messages"),
        (b'{"messages": "hi"}', {}, 400, "messages"),
        (b'{"messages": [{"content": "hi"}]}', {}, 400, "messages[0]"),
        (b'{"messages": [{"role": "user", "content": "hi"}], "stream": "yes"}', {}, 400, "stream"),
        (
            b'{"messages": [{"role": "user", "content": "hi"}]}',
            {"x-medpool-bucket": "exam/task/nope"},
            400,
            "bucket hint",
        ),
        (b'{"messages": [{"role": "user", "content": "hi"}], "metadata": {"bucket": 7}}', {}, 400, "bucket hint"),
        (b'{"messages": [{"role": "user", "content": "' + b"x" * 70_000 + b'"}]}', {}, 413, "larger than"),
        (b'{"messages": [{"role": "user", "content": "hi"}]}', {"x-medpool-router-hop": "1"}, 508, "already passed"),
    ],
)
def test_malformed_requests_get_a_clear_error_and_the_router_goes_on(served, raw, headers, status, says) -> None:
    run, live, key, work = served
    with running_router(run, work, "--max-body-bytes", "65536") as url:

        async def scenario() -> tuple[Any, ...]:
            async with aiohttp.ClientSession() as session:
                bad = await ask(session, url, "", raw=raw, headers=headers)
                good = await ask(session, url, t1_questions(key)[0])
                return bad, good

        (bad_status, _, body), good = asyncio.run(scenario())
    assert bad_status == status and says in body["error"]["message"], body
    assert good[0] == 200 and "model=card" in good[1]


def test_a_manifest_replaced_mid_traffic_serves_new_requests_and_finishes_old_ones(served) -> None:
    run, live, key, work = served
    manifest = work / f"manifest-{time.monotonic_ns()}.yaml"
    manifest.write_bytes((run / "routing_manifest.yaml").read_bytes())
    document = yaml.safe_load(manifest.read_text(encoding="utf-8"))
    document["buckets"]["exam/task/T1"].update(model="gen", tied_top=["gen"])  # a route the run's scores support

    def replace_with(text: str) -> None:
        tmp = manifest.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, manifest)

    with (
        held_upstream(work) as held,
        running_router(
            run,
            work,
            "--manifest",
            str(manifest),
            "--reload-interval",
            "0.05",
            "--pool",
            str(pool_file(work, live, held.url, ("card",))),
        ) as url,
    ):

        async def health(session: aiohttp.ClientSession) -> dict[str, Any]:
            async with session.get(url.removesuffix("/v1") + "/health") as r:
                return await r.json()

        async def scenario() -> tuple[Any, ...]:
            async with aiohttp.ClientSession() as session:
                old_sha = (await health(session))["manifest_sha256"]
                in_flight = [asyncio.create_task(ask(session, url, q)) for q in t1_questions(key)[:4]]
                await held.until_holding(session, 4)
                replace_with(yaml.safe_dump(document, allow_unicode=True))
                for _ in range(3000):
                    if (await health(session))["manifest_sha256"] != old_sha:
                        break
                    await asyncio.sleep(0.01)
                new_sha = (await health(session))["manifest_sha256"]
                after = await ask(session, url, t1_questions(key)[5])
                replace_with("buckets: [this is: not a manifest")  # a broken file: the last good one stays in service
                for _ in range(3000):
                    async with session.get(url.removesuffix("/v1") + "/metrics") as r:
                        if 'medpool_router_reloads_total{result="failed"} 1' in await r.text():
                            break
                    await asyncio.sleep(0.01)
                still = await ask(session, url, t1_questions(key)[6])
                held.proc.send_signal(signal.SIGUSR1)
                return old_sha, new_sha, after, still, await asyncio.gather(*in_flight)

        old_sha, new_sha, after, still, finished = asyncio.run(scenario())
    assert new_sha != old_sha
    assert after[0] == 200 and "bucket=exam/task/T1; model=gen" in after[1] and f"manifest={new_sha}" in after[1]
    assert still[0] == 200 and f"manifest={new_sha}" in still[1]
    assert len(finished) == 4
    for status, route, _ in finished:  # started under the old manifest: finished under it
        assert status == 200 and "model=card" in route and f"manifest={old_sha}" in route


def test_streams_pass_through_and_keys_stay_out_of_responses(served) -> None:
    run, live, key, work = served
    pool = pool_file(work, live, None, (), key_env="FAKE_UPSTREAM_KEY")
    env = {"FAKE_UPSTREAM_KEY": "sk-fake-upstream-123", "MEDPOOL_ROUTER_TOKEN": "router-token-456"}
    with running_router(run, work, "--pool", str(pool), env=env) as url:

        async def scenario() -> tuple[Any, ...]:
            auth = {"Authorization": "Bearer router-token-456"}
            async with aiohttp.ClientSession() as session:
                refused = await ask(session, url, t1_questions(key)[0])
                streamed = await ask(
                    session,
                    url,
                    "",
                    headers=auth,
                    raw=json.dumps(
                        {"messages": [{"role": "user", "content": t1_questions(key)[0]}], "stream": True}
                    ).encode(),
                )
                texts = []
                for path in ("/metrics", "/health"):
                    async with session.get(url.removesuffix("/v1") + path, headers=auth) as r:
                        texts.append(await r.text())
                return refused, streamed, texts

        refused, (status, route, body), texts = asyncio.run(scenario())
    assert refused[0] == 401 and refused[2]["error"]["type"] == "authentication_error"
    assert status == 200 and "model=card" in route
    assert isinstance(body, str) and body.count("data: ") >= 3 and body.rstrip().endswith("data: [DONE]")
    for text in (*texts, body, route):
        assert "sk-fake-upstream-123" not in text and "router-token-456" not in text
