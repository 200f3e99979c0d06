"""Preflight: a run whose key variable is unset or empty, or whose model file is missing or damaged,
is bad input before anything starts — exit 2, the backend and the pool file's line named, the key's
value never printed, no run folder written."""

from __future__ import annotations

import dataclasses
import importlib.metadata
from pathlib import Path

import pytest

from pool.config import load_pool
from pool.config.preflight import PreflightError, preflight
from pool.run import main
from runners.llamacpp import gguf_models
from runners.llamacpp.gguf_models import MODELS, PackageFile

SECRET = "sk-preflight-VALUE-never-shown-123"


def _items(tmp: Path) -> Path:
    path = tmp / "items.jsonl"
    path.write_text(
        '{"id": "q1", "task": "mcq", "track": "exam", "gold_type": "single_choice", '
        '"question": "2+2?", "options": {"A": "3", "B": "4"}, "gold": "B"}\n',
        encoding="utf-8",
    )
    return path


API_POOL = """backends:
  hosted:
    type: openai
    base_url: http://127.0.0.1:9/v1
    api_key_env: MEDPOOL_PREFLIGHT_KEY
models:
  - name: alpha
    backend: hosted
"""


def _run(tmp: Path, pool: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(
        [
            "--pool",
            str(pool),
            "--data",
            str(_items(tmp)),
            "--out",
            str(tmp / "run"),
            "--cache-dir",
            str(tmp / "cache"),
            *extra,
        ]
    )
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("value", [None, ""], ids=["unset", "empty"])
@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
def test_an_unset_or_empty_key_variable_stops_the_run_before_its_folder_exists(
    tmp_path, write_pool, capsys, monkeypatch, value, dry_run
):
    if value is None:
        monkeypatch.delenv("MEDPOOL_PREFLIGHT_KEY", raising=False)
    else:
        monkeypatch.setenv("MEDPOOL_PREFLIGHT_KEY", value)
    code, output = _run(tmp_path, write_pool(API_POOL, name="pool.yaml"), capsys, *(["--dry-run"] if dry_run else []))
    assert code == 2, output
    assert "pool.yaml:5: backends.hosted.api_key_env" in output and "backend 'hosted'" in output
    assert ("empty" if value == "" else "not set") in output
    assert "Traceback" not in output
    assert not (tmp_path / "run").exists()


def test_a_set_key_passes_and_its_value_is_never_printed(tmp_path, write_pool, monkeypatch):
    monkeypatch.setenv("MEDPOOL_PREFLIGHT_KEY", SECRET)
    config = load_pool(write_pool(API_POOL, name="pool.yaml"))
    preflight(config, tmp_path / "pool.yaml", config.models)  # no error


def test_the_judge_backend_is_checked_and_a_rescore_checks_only_the_judge(tmp_path, write_pool, monkeypatch):
    monkeypatch.delenv("MEDPOOL_PREFLIGHT_KEY", raising=False)
    text = API_POOL.replace("  hosted:", "  local:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n  hosted:")
    text = text.replace("    backend: hosted\n", "    backend: local\n") + "judge:\n  backend: hosted\n  model: j\n"
    config = load_pool(write_pool(text, name="pool.yaml"))
    with pytest.raises(PreflightError) as info:
        preflight(config, tmp_path / "pool.yaml", [config.judge_model()])
    assert "backends.hosted.api_key_env" in str(info.value) and "pool.yaml:8" in str(info.value)
    preflight(config, tmp_path / "pool.yaml", config.models)  # the candidates' backend needs no key


def test_a_missing_gguf_file_is_named_with_its_line(tmp_path, write_pool, capsys):
    pool = write_pool(
        f"""backends:
  local:
    type: llamacpp
models:
  - name: mine
    backend: local
    gguf: {tmp_path / "weights" / "missing.gguf"}
""",
        name="pool.yaml",
    )
    code, output = _run(tmp_path, pool, capsys)
    assert code == 2, output
    assert "pool.yaml:7: models[0].gguf" in output and "missing.gguf does not exist" in output
    assert not (tmp_path / "run").exists()


def test_a_known_model_whose_file_hashes_wrong_is_refused(tmp_path, write_pool, capsys, monkeypatch):
    """A damaged model package: the shipped key's file is prepared and hashed, and the mismatch is
    bad input naming the model, the line and the reinstall, before any server starts."""
    monkeypatch.setenv(gguf_models.CACHE_ENV, str(tmp_path / "models"))
    some_file = next(f for f in importlib.metadata.distribution("PyYAML").files or () if f.name == "__init__.py")
    damaged = dataclasses.replace(
        MODELS["smollm2-135m-instruct"], sha256="0" * 64, parts=(PackageFile("PyYAML", str(some_file)),)
    )
    monkeypatch.setitem(MODELS, "smollm2-135m-instruct", damaged)
    pool = write_pool(
        """backends:
  local:
    type: llamacpp
models:
  - name: small
    backend: local
    gguf: smollm2-135m-instruct
""",
        name="pool.yaml",
    )
    code, output = _run(tmp_path, pool, capsys)
    assert code == 2, output
    assert "pool.yaml:7: models[0].gguf" in output and "sha256 mismatch" in output and "reinstall" in output
    assert not (tmp_path / "run").exists()


def test_a_gold_type_without_a_scorer_is_bad_input_before_any_answer_is_paid_for(
    tmp_path, write_pool, capsys, monkeypatch
):
    from eval.scorers import SCORERS

    monkeypatch.setenv("MEDPOOL_PREFLIGHT_KEY", SECRET)
    monkeypatch.delitem(SCORERS, "single_choice")
    code, output = _run(tmp_path, write_pool(API_POOL, name="pool.yaml"), capsys)
    assert code == 2, output
    assert "items.jsonl:1: item" in output and "no scorer for gold type 'single_choice'" in output
    assert "@register('single_choice')" in output and "eval/scorers/" in output
    assert not (tmp_path / "run").exists()


def test_scorer_modules_are_discovered_not_listed() -> None:
    import pkgutil

    import eval.scorers
    from eval.gold_types import GOLD_TYPES

    modules = {m.name for m in pkgutil.iter_modules(eval.scorers.__path__)}
    assert {"exam", "tcm", "orchestration", "judged"} <= modules
    assert "from eval.scorers import exam" not in (Path(eval.scorers.__file__).read_text(encoding="utf-8"))
    assert set(GOLD_TYPES) <= set(eval.scorers.SCORERS)
