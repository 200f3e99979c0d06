"""The router serves models of a managed llama.cpp backend: it starts their servers as pool.run does and
stops them when it stops.

A manifest built from the shipped pool names only managed models, which nothing serves once pool.run
has finished. Here a run of FAKE specialists gives the manifest (``card`` leads T1); the router's pool
file puts ``card`` on a managed ``llamacpp`` backend with the real SmolLM2-135M, so a T1 question must
be answered by a llama.cpp server the router started, and that server must be gone after the router's
SIGTERM.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from bench.harness.router import first_run, running_router
from bench.harness.specialists import write_suite
from tests.fakes import ThreadedFakes
from tests.fakes.openai_fake import FakeOpenAIServer
from tests.fakes.specialists import specialist_behaviour
from tests.local_models import requires_llama
from tests.processes import alive


@pytest.fixture
def specialists(fakes: ThreadedFakes) -> tuple[FakeOpenAIServer, dict]:
    key: dict = {}
    fake = fakes.start(FakeOpenAIServer(behave=specialist_behaviour(key)))
    return fake, key


def managed_pool(path: Path, fake_url: str) -> Path:
    """``card`` on a managed llama.cpp backend (SmolLM2-135M), ``endo`` and ``gen`` still FAKE."""
    path.write_text(
        f"""backends:
  local:
    type: llamacpp
    slots: 1
    n_ctx: 1024
  fake:
    type: openai
    base_url: {fake_url}
models:
  - name: card
    backend: local
    gguf: smollm2-135m-instruct
    mode: chat
    max_tokens: 8
  - {{name: endo, backend: fake, model: endo, max_tokens: 8}}
  - {{name: gen, backend: fake, model: gen, max_tokens: 8}}
""",
        encoding="utf-8",
    )
    return path


def chat(url: str, bucket: str) -> tuple[dict, str]:
    body = json.dumps(
        {"model": "medpool-router", "messages": [{"role": "user", "content": "房颤患者需要抗凝吗？"}]}
    ).encode()
    request = urllib.request.Request(
        url + "/chat/completions",
        data=body,
        method="POST",
        headers={"content-type": "application/json", "x-medpool-bucket": bucket},
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        return json.loads(response.read()), response.headers["x-medpool-route"]


@requires_llama
def test_router_starts_the_managed_llamacpp_server_and_stops_it(tmp_path: Path, specialists) -> None:
    fake, key = specialists
    key.update(write_suite(tmp_path / "train.jsonl", 30, "train"))
    run, _ = first_run(tmp_path, fake.base_url, per_task=30)
    pool = managed_pool(tmp_path / "managed.yaml", fake.base_url)
    pid_file = run / "router-llamacpp-local.pid"

    with running_router(run, tmp_path, "--pool", str(pool)) as url:
        asked_fake = len(fake.requests)
        answer, route = chat(url, "exam/task/T1")
        assert "model=card" in route and "by=hint" in route
        assert answer["model"] == "card" and answer["choices"][0]["message"]["content"] is not None
        assert len(fake.requests) == asked_fake  # answered by llama.cpp, not by the FAKE
        server_pid = json.loads(pid_file.read_text())["pid"]
        assert alive(server_pid)
        health = json.loads(urllib.request.urlopen(url.removesuffix("/v1") + "/health", timeout=30).read())
        assert "card" in json.dumps(health)
    assert not alive(server_pid), "the managed llama.cpp server outlived the router"
    assert (run / "router-llamacpp-local.log").is_file()
