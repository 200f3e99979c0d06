"""How a llamacpp backend's engine, replicas, threads, slots and concurrency are sized when the file leaves them out."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import runners.llamacpp.settings as llamacpp_settings
from pool.config import PoolConfigError, load_pool
from pool.config.schema import LlamaCppBackend
from tests.fake_pool import PoolWriter

MODEL = "models:\n  - {name: m, backend: local, gguf: gemma3-270m}\n"


def _backend(write_pool: PoolWriter, lines: str = "") -> LlamaCppBackend:
    backend = load_pool(write_pool(f"backends:\n  local:\n    type: llamacpp\n{lines}{MODEL}")).backends["local"]
    assert isinstance(backend, LlamaCppBackend)
    return backend


@pytest.fixture
def cores(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    def set_cores(n: int) -> None:
        monkeypatch.setattr(llamacpp_settings, "_available_cpus", lambda: n)

    return set_cores


LLAMA_CPP = "    engine: llama_cpp\n"


@pytest.mark.parametrize(
    ("machine", "lines", "expected"),
    [
        # (cores, backend lines, (replicas, n_threads, max_concurrency)), llama-cpp-python's server
        (2, "", (2, 1, 2)),  # one 1-thread replica per core, one request in flight each
        (8, "", (8, 1, 8)),
        (64, "", (16, 1, 16)),  # capped
        (1, "", (1, None, 1)),  # one server: today's thread default (the manager's 2)
        (8, "    n_threads: 2\n", (4, 2, 4)),  # as many as fit the cores
        (2, "    n_threads: 2\n", (1, 2, 1)),
        (2, "    n_threads: 4\n", (1, 4, 1)),
        (8, "    max_concurrency: 3\n", (3, 1, 3)),  # never more replicas than requests in flight
        (2, "    replicas: 3\n", (3, 1, 3)),  # explicit: the user's call, even past the cores
        (2, "    replicas: 1\n", (1, None, 1)),
        (2, "    replicas:\n", (2, 1, 2)),  # null = sized to the machine
        (2, "    replicas: 2\n    n_threads: 2\n    max_concurrency: 6\n", (2, 2, 6)),
    ],
)
def test_left_out_settings_are_sized_to_the_machine(
    write_pool: PoolWriter,
    cores: Callable[[int], None],
    machine: int,
    lines: str,
    expected: tuple[int, int | None, int],
) -> None:
    cores(machine)
    backend = _backend(write_pool, LLAMA_CPP + lines)
    assert backend.engine == "llama_cpp"
    assert (backend.replicas, backend.n_threads, backend.max_concurrency, backend.slots) == (*expected, 1)


@pytest.mark.parametrize(
    ("machine", "lines", "expected"),
    [
        # (cores, backend lines, (replicas, n_threads, slots, max_concurrency)), the batched server
        (2, "", (1, 2, 4, 4)),  # one server with every core, 4 requests per step
        (8, "", (1, 8, 4, 4)),
        (8, "    replicas: 2\n", (2, 4, 4, 8)),  # the cores shared out
        (2, "    slots: 8\n", (1, 2, 8, 8)),
        (2, "    slots: 8\n    max_concurrency: 3\n", (1, 2, 8, 3)),  # fewer in flight: the user's call
        (2, "    n_threads: 1\n    slots: 2\n", (1, 1, 2, 2)),
        (2, "    engine: batched\n    slots:\n", (1, 2, 4, 4)),  # null = the default
    ],
)
def test_the_batched_engine_is_the_default_and_sized_to_the_machine(
    write_pool: PoolWriter, cores: Callable[[int], None], machine: int, lines: str, expected: tuple[int, int, int, int]
) -> None:
    cores(machine)
    backend = _backend(write_pool, lines)
    assert backend.engine == "batched"
    assert (backend.replicas, backend.n_threads, backend.slots, backend.max_concurrency) == expected


def test_slots_without_the_batched_engine_is_an_error_naming_the_field(write_pool: PoolWriter) -> None:
    with pytest.raises(PoolConfigError) as info:
        _backend(write_pool, LLAMA_CPP + "    slots: 4\n")
    assert "model_pool.yaml:5: backends.local.slots: 4 slots need engine: batched" in str(info.value)


def test_an_unknown_engine_is_an_error_naming_the_field(write_pool: PoolWriter) -> None:
    with pytest.raises(PoolConfigError) as info:
        _backend(write_pool, "    engine: vllm\n")
    assert "backends.local.engine" in str(info.value)
    assert "batched" in str(info.value) and "llama_cpp" in str(info.value)


def test_fewer_requests_in_flight_than_replicas_is_an_error_naming_the_field(write_pool: PoolWriter) -> None:
    with pytest.raises(PoolConfigError) as info:
        _backend(write_pool, LLAMA_CPP + "    replicas: 4\n    max_concurrency: 2\n")
    assert "model_pool.yaml:6: backends.local.max_concurrency: 2 is fewer than replicas (4)" in str(info.value)
    assert "set max_concurrency to at least 4 or replicas to 2" in str(info.value)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("0", "greater than or equal to 1"),
        ("-1", "greater than or equal to 1"),
        ('"two"', "whole number"),
        ("1000", "less than or equal to 16"),
    ],
)
def test_a_bad_replica_count_is_reported_alone(write_pool: PoolWriter, value: str, words: str) -> None:
    with pytest.raises(PoolConfigError) as info:
        _backend(write_pool, f"    replicas: {value}\n")
    assert [(i.line, i.field) for i in info.value.issues] == [(4, "backends.local.replicas")]
    with pytest.raises(PoolConfigError) as info:
        _backend(write_pool, f"    replicas: {value}\n" + LLAMA_CPP)
    assert [(i.line, i.field) for i in info.value.issues] == [(4, "backends.local.replicas")]
    assert words in str(info.value)


SINGLE = LLAMA_CPP + "    max_concurrency: 1\n    n_threads: 2\n"  # the shipped pool's local backend before replicas


def test_a_single_server_keeps_its_fingerprint_and_replicas_change_it(
    write_pool: PoolWriter, cores: Callable[[int], None]
) -> None:
    """replicas: 1 and engine: llama_cpp are left out of dumps, so pools planned with llama-cpp-python's
    server before replicas and engines existed still resume."""
    cores(2)
    single = load_pool(write_pool(f"backends:\n  local:\n    type: llamacpp\n{SINGLE}{MODEL}"))
    assert single.backends["local"].replicas == 1
    assert "replicas" not in single.backends["local"].model_dump()
    # computed by the schema before replicas existed, for this same file
    assert single.fingerprint() == "d58737a98bd7f4bc96b27994fd1bcffc3f9ca9a469cdf4acd8c14881d4e191f3"
    replicated = load_pool(write_pool(f"backends:\n  local:\n    type: llamacpp\n{LLAMA_CPP}    replicas: 2\n{MODEL}"))
    assert replicated.backends["local"].model_dump()["replicas"] == 2
    assert replicated.fingerprint() != single.fingerprint()
    batched = load_pool(write_pool(f"backends:\n  local:\n    type: llamacpp\n{MODEL}"))
    assert batched.backends["local"].model_dump()["engine"] == "batched"
    assert batched.fingerprint() not in {single.fingerprint(), replicated.fingerprint()}  # other answers


def test_a_chat_format_on_the_batched_engine_is_an_error_naming_the_model_field(write_pool: PoolWriter) -> None:
    """The batched engine renders the GGUF's own template; llama-cpp-python's named formats need its server."""
    model = "models:\n  - {name: m, backend: local, gguf: gemma3-270m, chat_format: chatml}\n"
    with pytest.raises(PoolConfigError) as info:
        load_pool(write_pool(f"backends:\n  local:\n    type: llamacpp\n{model}"))
    assert [(i.line, i.field) for i in info.value.issues] == [(5, "models[0].chat_format")]
    assert "add 'engine: llama_cpp' to backend 'local'" in str(info.value)
    assert (
        load_pool(write_pool(f"backends:\n  local:\n    type: llamacpp\n{LLAMA_CPP}{model}")).model("m").chat_format
        == "chatml"
    )
