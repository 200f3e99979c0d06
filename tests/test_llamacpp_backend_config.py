"""How a llamacpp backend's replicas, threads and concurrency are sized when the file leaves them out."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import pool.config_schema as schema
from pool.config import PoolConfigError, load_pool
from pool.config_schema import LlamaCppBackend

MODEL = "models:\n  - {name: m, backend: local, gguf: gemma3-270m}\n"


def _backend(tmp_path: Path, lines: str = "") -> LlamaCppBackend:
    path = tmp_path / "model_pool.yaml"
    path.write_text(f"backends:\n  local:\n    type: llamacpp\n{lines}{MODEL}", encoding="utf-8")
    backend = load_pool(path).backends["local"]
    assert isinstance(backend, LlamaCppBackend)
    return backend


@pytest.fixture
def cores(monkeypatch: pytest.MonkeyPatch) -> Callable[[int], None]:
    def set_cores(n: int) -> None:
        monkeypatch.setattr(schema, "_available_cpus", lambda: n)

    return set_cores


@pytest.mark.parametrize(
    ("machine", "lines", "expected"),
    [
        # (cores, backend lines, (replicas, n_threads, max_concurrency))
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
def test_left_out_settings_are_sized_to_the_machine(tmp_path: Path, cores: Callable[[int], None], machine: int, lines: str,
                                                     expected: tuple[int, int | None, int]) -> None:
    cores(machine)
    backend = _backend(tmp_path, lines)
    assert (backend.replicas, backend.n_threads, backend.max_concurrency) == expected


def test_fewer_requests_in_flight_than_replicas_is_an_error_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(PoolConfigError) as info:
        _backend(tmp_path, "    replicas: 4\n    max_concurrency: 2\n")
    assert "model_pool.yaml:5: backends.local.max_concurrency: 2 is fewer than replicas (4)" in str(info.value)
    assert "set max_concurrency to at least 4 or replicas to 2" in str(info.value)


@pytest.mark.parametrize(("value", "words"), [("0", "greater than or equal to 1"), ("-1", "greater than or equal to 1"),
                                              ('"two"', "whole number"), ("1000", "less than or equal to 16")])
def test_a_bad_replica_count_is_reported_alone(tmp_path: Path, value: str, words: str) -> None:
    with pytest.raises(PoolConfigError) as info:
        _backend(tmp_path, f"    replicas: {value}\n")
    assert [(i.line, i.field) for i in info.value.issues] == [(4, "backends.local.replicas")]
    assert words in str(info.value)


SINGLE = "    max_concurrency: 1\n    n_threads: 2\n"  # the shipped pool's local backend before replicas


def test_a_single_server_keeps_its_fingerprint_and_replicas_change_it(tmp_path: Path,
                                                                      cores: Callable[[int], None]) -> None:
    """replicas: 1 is left out of dumps, so pools planned before replicas existed still resume."""
    cores(2)
    path = tmp_path / "model_pool.yaml"
    path.write_text(f"backends:\n  local:\n    type: llamacpp\n{SINGLE}{MODEL}", encoding="utf-8")
    single = load_pool(path)
    assert single.backends["local"].replicas == 1
    assert "replicas" not in single.backends["local"].model_dump()
    # computed by the schema before replicas existed, for this same file
    assert single.fingerprint() == "d58737a98bd7f4bc96b27994fd1bcffc3f9ca9a469cdf4acd8c14881d4e191f3"
    path.write_text(f"backends:\n  local:\n    type: llamacpp\n    replicas: 2\n{MODEL}", encoding="utf-8")
    replicated = load_pool(path)
    assert replicated.backends["local"].model_dump()["replicas"] == 2
    assert replicated.fingerprint() != single.fingerprint()
