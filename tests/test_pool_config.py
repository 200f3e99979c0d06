"""model_pool.yaml: schema, defaults, located error messages, YAML boolean trap, fingerprint."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from pool.config import (
    LlamaCppBackend,
    OpenAIBackend,
    PoolConfig,
    PoolConfigError,
    file_stem,
    load_pool,
    missing_api_keys,
)
from pool.yaml_lines import PoolYamlLoader
from runners.base import GenerationParams

ROOT = Path(__file__).resolve().parents[1]

LOCAL = """\
backends:
  local:
    type: llamacpp
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "model_pool.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load(tmp_path: Path, text: str) -> PoolConfig:
    return load_pool(write(tmp_path, text))


def error_of(tmp_path: Path, text: str) -> PoolConfigError:
    with pytest.raises(PoolConfigError) as info:
        load(tmp_path, text)
    return info.value


def assert_issue(err: PoolConfigError, line: int, field: str, *words: str) -> None:
    """Some issue has this line and field, and its printed form names the file and words."""
    matching = [i for i in err.issues if i.line == line and i.field == field]
    assert matching, f"no issue at line {line} field {field!r}; got:\n{err}"
    text = str(matching[0])
    assert text.startswith(f"{matching[0].file}:{line}") and "model_pool.yaml" in text
    assert f": {field}: " in text if field else True
    for word in words:
        assert word in text, f"{word!r} not in {text!r}"


# ---- the shipped pool --------------------------------------------------------------------


def test_shipped_pool_loads_and_runs_without_keys() -> None:
    config = load_pool(ROOT / "model_pool.yaml")
    assert list(config.backends) == ["local"]
    local = config.backends["local"]
    assert isinstance(local, LlamaCppBackend)
    assert (local.max_concurrency, local.n_ctx, local.n_threads) == (1, 2048, 2)
    assert [m.name for m in config.models] == ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"]
    gemma = config.model("gemma3-270m")
    assert gemma.mode == "completion" and gemma.gguf == "gemma3-270m"
    assert gemma.stop == ("\n\n", "问题：", "Question:")
    assert all(m.temperature == 0 and m.max_tokens == 256 for m in config.models)
    judge = config.judge_model()
    assert judge is not None and judge.name == "qwen2.5-coder-0.5b"
    assert (judge.temperature, judge.max_tokens) == (0, 512)
    assert missing_api_keys(config, environ={}) == []


def test_shipped_commented_examples_are_valid(tmp_path: Path) -> None:
    """Uncommenting every indented example line (backends and their models) still loads."""
    example_line = re.compile(r"^(\s+)# (\s*(?:- )?[A-Za-z0-9_.]+:(?: |$).*)$")
    lines = (ROOT / "model_pool.yaml").read_text(encoding="utf-8").splitlines()
    uncommented = [example_line.sub(r"\1\2", line) for line in lines]
    assert uncommented != lines
    config = load(tmp_path, "\n".join(uncommented))
    assert {"deepseek", "vllm", "ollama"} <= set(config.backends)
    assert config.model("qwen3-8b").think is False
    assert config.backends["deepseek"].requests_per_minute == 60
    assert missing_api_keys(config, environ={}) == ["DEEPSEEK_API_KEY"]


# ---- defaults and conversion -------------------------------------------------------------


def test_defaults_are_overridden_by_entries(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        LOCAL
        + """\
defaults:
  temperature: 0.7
  max_tokens: 100
  stop: ["END"]
  seed: 7
models:
  - name: a
    backend: local
    gguf: gemma3-270m
  - name: b
    backend: local
    gguf: gemma3-270m
    temperature: 0
    stop: []
    seed: null
""",
    )
    a, b = config.models
    assert (a.temperature, a.max_tokens, a.stop, a.seed) == (0.7, 100, ("END",), 7)
    assert (b.temperature, b.max_tokens, b.stop, b.seed) == (0.0, 100, (), None)
    assert a.model == "a"  # the server model id defaults to the name


def test_generation_params_conversion(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        """\
backends:
  ol: {type: ollama, base_url: "http://localhost:11434/"}
models:
  - name: qwen3:8b
    backend: ol
    temperature: 0.2
    max_tokens: 64
    stop: [a, b]
    top_p: 0.9
    seed: 3
    think: high
""",
    )
    params = config.models[0].generation_params()
    assert params == GenerationParams(
        temperature=0.2,
        max_tokens=64,
        stop=("a", "b"),
        top_p=0.9,
        seed=3,
        think="high",  # type: ignore[arg-type]
    )
    assert config.backends["ol"].base_url == "http://localhost:11434"  # type: ignore[union-attr]


def test_backend_defaults_by_type(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        LOCAL
        + """\
  api:
    type: openai
    base_url: https://api.deepseek.com/v1
    api_key_env: DEEPSEEK_API_KEY
    requests_per_minute: 60
models:
  - {name: m, backend: api}
""",
    )
    api = config.backends["api"]
    assert isinstance(api, OpenAIBackend)
    assert (api.max_concurrency, api.timeout_s, api.max_retries) == (8, 120.0, 3)
    assert config.backends["local"].max_concurrency == 1
    assert missing_api_keys(config, environ={"DEEPSEEK_API_KEY": "x"}) == []
    assert missing_api_keys(config, environ={"DEEPSEEK_API_KEY": ""}) == ["DEEPSEEK_API_KEY"]


def test_inline_judge_on_another_backend(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        LOCAL
        + """\
  api: {type: openai, base_url: "https://api.deepseek.com/v1", api_key_env: DEEPSEEK_API_KEY}
models:
  - {name: m, backend: local, gguf: gemma3-270m, enabled: false}
judge:
  backend: api
  model: deepseek-chat
  max_tokens: 300
""",
    )
    judge = config.judge_model()
    assert judge is not None
    assert (judge.name, judge.backend, judge.model, judge.max_tokens) == (
        "judge",
        "api",
        "deepseek-chat",
        300,
    )
    # the judge's backend key counts even though every candidate is disabled
    assert missing_api_keys(config, environ={}) == ["DEEPSEEK_API_KEY"]


# ---- the YAML boolean trap ---------------------------------------------------------------


def test_yes_no_on_off_are_words_for_strings_and_booleans_for_bools(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        """\
backends:
  ol: {type: ollama, base_url: "http://localhost:11434"}
models:
  - name: no
    backend: ol
    think: off
    stop: [on, off, yes]
    enabled: yes
  - name: on
    backend: ol
    think: On
    enabled: NO
  - name: m3
    backend: ol
    think: false
""",
    )
    first, second, third = config.models
    assert first.name == "no" and first.think is False and first.enabled is True
    assert first.stop == ("on", "off", "yes")
    assert second.name == "on" and second.think is True and second.enabled is False
    assert third.think is False
    assert config.enabled_models() == (first, third)


def test_loader_resolves_only_true_false_as_booleans() -> None:
    data = yaml.load("a: [yes, no, on, off, y, n, true, False, TRUE]", Loader=PoolYamlLoader)
    assert data == {"a": ["yes", "no", "on", "off", "y", "n", True, False, True]}
    # the stock SafeLoader is untouched
    assert yaml.safe_load("a: off") == {"a": False}


# ---- located errors ----------------------------------------------------------------------


def test_unknown_backend(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        LOCAL
        + """\
  deepseek: {type: openai, base_url: "https://api.deepseek.com/v1"}
models:
  - {name: a, backend: local, gguf: gemma3-270m}
  - {name: b, backend: deepseek}
  - name: c
    backend: vllm2
""",
    )
    assert_issue(
        err, 9, "models[2].backend", "unknown backend 'vllm2'", "declared backends: local, deepseek"
    )


def test_duplicate_model_name_points_at_second(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        LOCAL
        + """\
models:
  - name: a
    backend: local
    gguf: gemma3-270m
  - name: a
    backend: local
    gguf: gemma3-270m
""",
    )
    assert_issue(err, 8, "models[1].name", "duplicate model name 'a'", "models[0]")


def test_unknown_key_suggests_the_close_one(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        LOCAL
        + """\
    n_ctxx: 4096
defaults:
  temprature: 0
models:
  - name: a
    backend: local
    gguf: gemma3-270m
    max_token: 9
""",
    )
    assert_issue(err, 4, "backends.local.n_ctxx", "unknown key 'n_ctxx'", "did you mean 'n_ctx'?")
    assert_issue(err, 6, "defaults.temprature", "did you mean 'temperature'?")
    assert_issue(err, 11, "models[0].max_token", "did you mean 'max_tokens'?")


def test_unknown_key_without_close_match_lists_allowed(tmp_path: Path) -> None:
    err = error_of(tmp_path, LOCAL + "models: []\ncolour: red\n")
    assert_issue(
        err, 5, "colour", "unknown key 'colour'", "allowed keys: backends, defaults, models, judge"
    )


def test_key_for_another_backend_type(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        LOCAL
        + """\
    base_url: http://localhost:8080
models:
  - {name: a, backend: local, gguf: gemma3-270m}
""",
    )
    assert_issue(err, 4, "backends.local.base_url", "run time")


def test_wrong_types(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        LOCAL
        + """\
    max_concurrency: 0
models:
  - name: 12:30
    backend: local
    gguf: gemma3-270m
    max_tokens: "256"
    temperature: hot
    stop: "\\n"
    enabled: maybe
    think: sometimes
""",
    )
    assert_issue(err, 4, "backends.local.max_concurrency", "greater than or equal to 1")
    assert_issue(err, 6, "models[0].name", "expected text", "'12:30'", "quotes")
    assert_issue(err, 9, "models[0].max_tokens", "whole number", "'256'")
    assert_issue(err, 10, "models[0].temperature", "expected a number")
    assert_issue(err, 11, "models[0].stop", "expected a list")
    assert_issue(err, 12, "models[0].enabled", "true or false")
    assert_issue(err, 13, "models[0].think", "low, medium, high")


def test_missing_required_fields(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        """\
backends:
  api:
    type: openai
  x:
    max_concurrency: 2
models:
  - name: a
    gguf: gemma3-270m
""",
    )
    assert_issue(err, 2, "backends.api.base_url", "required field 'base_url' is missing")
    assert_issue(err, 4, "backends.x.type", "required field 'type'", "openai", "llamacpp")
    assert_issue(err, 7, "models[0].backend", "required field 'backend' is missing")


def test_missing_top_level_block(tmp_path: Path) -> None:
    err = error_of(tmp_path, LOCAL)
    assert_issue(err, 1, "models", "required field 'models' is missing")


def test_unknown_backend_type(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        """\
backends:
  v:
    base_url: http://localhost:8000/v1
    type: vllm
models:
  - {name: a, backend: v}
""",
    )
    assert_issue(err, 4, "backends.v.type", "unknown backend type 'vllm'", "openai")


def test_yaml_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        """\
backends:
  local:
    type: llamacpp
   n_ctx: 10
""",
    )
    (issue,) = err.issues
    assert issue.line == 4 and issue.column is not None
    assert str(err).startswith(f"{tmp_path / 'model_pool.yaml'}:4:") and "YAML syntax error" in str(
        err
    )


def test_duplicate_yaml_key(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        LOCAL
        + """\
models:
  - name: a
    backend: local
    gguf: gemma3-270m
    temperature: 0
    temperature: 1
""",
    )
    (issue,) = err.issues
    assert issue.line == 9 and "duplicate key 'temperature'" in str(err) and "line 8" in str(err)


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    err = error_of(tmp_path, text)
    assert "model_pool.yaml:1:" in str(err) and "empty" in str(err)


@pytest.mark.parametrize("text,word", [("- a\n- b\n", "a list"), ("just text\n", "a single value")])
def test_top_level_not_a_mapping(tmp_path: Path, text: str, word: str) -> None:
    err = error_of(tmp_path, text)
    assert "model_pool.yaml:1:" in str(err) and "top level must be a mapping" in str(err)
    assert "the top level is" in str(err)
    assert word in str(err)


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(PoolConfigError, match="nope.yaml: cannot read"):
        load_pool(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    "value",
    [
        "sk-1234567890abcdef1234",
        "sk_live_abc",
        "a8F3kD92mZq71LxP0sWe4RtY",
        "hf_AbCdEf",
        "not a name",
    ],
)
def test_api_key_env_that_looks_like_a_key_is_rejected(tmp_path: Path, value: str) -> None:
    err = error_of(
        tmp_path,
        f"""\
backends:
  api:
    type: openai
    base_url: https://api.example.com/v1
    api_key_env: "{value}"
models:
  - {{name: m, backend: api}}
""",
    )
    assert_issue(err, 5, "backends.api.api_key_env", "env")
    assert value not in str(err)  # a pasted key is never echoed


def test_api_key_in_the_file_gets_the_env_var_hint(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        """\
backends:
  api:
    type: openai
    base_url: https://api.example.com/v1
    api_key: sk-secret-value-123
models:
  - {name: m, backend: api}
""",
    )
    assert_issue(err, 5, "backends.api.api_key", "api_key_env")
    assert "sk-secret" not in str(err)


def test_unsafe_model_name(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        LOCAL
        + """\
models:
  - name: "my model?"
    backend: local
    gguf: gemma3-270m
  - name: ../escape
    backend: local
    gguf: gemma3-270m
""",
    )
    assert_issue(err, 5, "models[0].name", "' '", "'?'")
    assert_issue(err, 8, "models[1].name", "'..'")


def test_backend_specific_model_keys(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        LOCAL
        + """\
  api: {type: openai, base_url: "http://localhost:8000/v1"}
models:
  - name: a
    backend: local
  - name: b
    backend: local
    gguf: llama3
  - name: c
    backend: api
    gguf: gemma3-270m
    think: off
""",
    )
    assert_issue(err, 6, "models[0].gguf", "llamacpp models need gguf")
    assert_issue(err, 10, "models[1].gguf", "unknown gguf 'llama3'", ".gguf")
    assert_issue(err, 13, "models[2].gguf", "only for llamacpp")
    assert_issue(err, 14, "models[2].think", "only sent to ollama")


def test_defaults_think_applies_to_ollama_models_only(tmp_path: Path) -> None:
    config = load(
        tmp_path,
        LOCAL
        + """\
  ol: {type: ollama, base_url: "http://localhost:11434"}
defaults:
  think: off
models:
  - {name: a, backend: local, gguf: gemma3-270m}
  - {name: b, backend: ol}
""",
    )
    assert config.model("a").think is None and config.model("b").think is False


def test_judge_errors(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        LOCAL
        + """\
models:
  - {name: qwen, backend: local, gguf: gemma3-270m}
judge:
  model: qwne
""",
    )
    assert_issue(err, 7, "judge.model", "unknown pool model 'qwne'", "did you mean 'qwen'?")
    err = error_of(
        tmp_path,
        LOCAL
        + """\
models:
  - {name: qwen, backend: local, gguf: gemma3-270m}
judge:
  temperature: 0
  max_tokens: 0
""",
    )
    assert_issue(err, 8, "judge.max_tokens", "greater than or equal to 1")
    err = error_of(
        tmp_path,
        LOCAL
        + """\
models:
  - {name: qwen, backend: local, gguf: gemma3-270m}
judge:
  temperature: 0
""",
    )
    assert_issue(err, 6, "judge.model", "pool model name")


def test_many_errors_are_all_reported_in_line_order(tmp_path: Path) -> None:
    err = error_of(
        tmp_path,
        LOCAL
        + """\
    n_ctx: lots
models:
  - {name: a, backend: local, gguf: gemma3-270m, top_p: 2}
  - {name: b, backend: local, gguf: gemma3-270m, mode: chatty}
""",
    )
    assert [i.line for i in err.issues] == [4, 6, 7]
    assert len(str(err).splitlines()) == 3


# ---- fingerprint and names ---------------------------------------------------------------

POOL_FOR_FINGERPRINT = (
    LOCAL
    + """\
  api: {type: openai, base_url: "https://api.deepseek.com/v1", api_key_env: DEEPSEEK_API_KEY}
defaults:
  max_tokens: 200
models:
  - {name: a, backend: local, gguf: gemma3-270m, notes: first}
  - {name: b, backend: api, model: deepseek-chat}
"""
)


def test_fingerprint_is_stable_and_ignores_notes_and_key_names(tmp_path: Path) -> None:
    base = load(tmp_path, POOL_FOR_FINGERPRINT).fingerprint()
    assert len(base) == 64 and base == load(tmp_path, POOL_FOR_FINGERPRINT).fingerprint()
    variants = {
        "notes": POOL_FOR_FINGERPRINT.replace("notes: first", "notes: something else"),
        "key var": POOL_FOR_FINGERPRINT.replace("DEEPSEEK_API_KEY", "DS_KEY"),
        "order": POOL_FOR_FINGERPRINT.replace(
            "  - {name: a, backend: local, gguf: gemma3-270m, notes: first}\n", ""
        )
        + "  - {name: a, backend: local, gguf: gemma3-270m}\n",
        "explicit default": POOL_FOR_FINGERPRINT.replace(
            "model: deepseek-chat}", "model: deepseek-chat, max_tokens: 200}"
        ),
    }
    for what, text in variants.items():
        assert load(tmp_path, text).fingerprint() == base, what
    changed = POOL_FOR_FINGERPRINT.replace("max_tokens: 200", "max_tokens: 201")
    assert load(tmp_path, changed).fingerprint() != base


def test_dumped_config_validates_back_to_the_same(tmp_path: Path) -> None:
    config = load_pool(ROOT / "model_pool.yaml")
    again = PoolConfig.model_validate(config.model_dump())
    assert again.models == config.models and again.judge_model() == config.judge_model()
    assert again.fingerprint() == config.fingerprint()


@given(st.text(alphabet="abcXYZ019._:/@+-", min_size=1, max_size=30))
def test_file_stem_is_one_reversible_path_component(name: str) -> None:
    stem = file_stem(name)
    assert "/" not in stem and ":" not in stem
    assert stem.replace("%3A", ":").replace("%2F", "/").replace("%25", "%") == name


def test_a_base_model_cannot_judge(tmp_path):
    path = tmp_path / "pool.yaml"
    path.write_text(
        "backends:\n  local:\n    type: llamacpp\nmodels:\n  - name: g\n    backend: local\n"
        "    gguf: gemma3-270m\n    mode: completion\njudge:\n  model: g\n",
        encoding="utf-8",
    )
    with pytest.raises(PoolConfigError, match=r"pool.yaml:10: judge.model: 'g' is a completion \(base\) model"):
        load_pool(path)
