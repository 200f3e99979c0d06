"""model_pool.yaml: schema, defaults, located error messages, YAML boolean trap, fingerprint."""

from __future__ import annotations

import os
import re
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
from pool.config.yaml_lines import PoolYamlLoader
from runners.base import GenerationParams
from tests.fake_pool import PoolWriter

ROOT = Path(__file__).resolve().parents[2]

LOCAL = """\
backends:
  local:
    type: llamacpp
"""


def load(write_pool: PoolWriter, text: str) -> PoolConfig:
    return load_pool(write_pool(text))


def error_of(write_pool: PoolWriter, text: str) -> PoolConfigError:
    with pytest.raises(PoolConfigError) as info:
        load(write_pool, text)
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
    # sized to the machine: one batched server with every usable core, 4 requests per step
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    assert local.engine == "batched"
    assert (local.replicas, local.slots, local.max_concurrency, local.n_ctx) == (1, 4, 4, 2048)
    assert local.n_threads == cores
    assert [m.name for m in config.models] == ["smollm2-135m", "gemma3-270m", "qwen2.5-coder-0.5b"]
    gemma = config.model("gemma3-270m")
    assert gemma.mode == "completion" and gemma.gguf == "gemma3-270m"
    assert gemma.stop == ("\n\n", "问题：", "Question:")
    assert all(m.temperature == 0 and m.max_tokens == 256 for m in config.models)
    judge = config.judge_model()
    assert judge is not None and judge.name == "qwen2.5-coder-0.5b"
    assert (judge.temperature, judge.max_tokens) == (0, 256)
    assert missing_api_keys(config, environ={}) == []


def test_shipped_commented_examples_are_valid(write_pool: PoolWriter) -> None:
    """Uncommenting every indented example line (backends and their models) still loads."""
    example_line = re.compile(r"^(\s+)# (\s*(?:- )?[A-Za-z0-9_.]+:(?: |$).*)$")
    lines = (ROOT / "model_pool.yaml").read_text(encoding="utf-8").splitlines()
    uncommented = [example_line.sub(r"\1\2", line) for line in lines]
    assert uncommented != lines
    config = load(write_pool, "\n".join(uncommented))
    assert {"deepseek", "vllm", "ollama"} <= set(config.backends)
    assert config.model("qwen3-8b").think is False
    assert config.backends["deepseek"].requests_per_minute == 60
    assert missing_api_keys(config, environ={}) == ["DEEPSEEK_API_KEY"]


# ---- defaults and conversion -------------------------------------------------------------


def test_defaults_are_overridden_by_entries(write_pool: PoolWriter) -> None:
    config = load(
        write_pool,
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


def test_generation_params_conversion(write_pool: PoolWriter) -> None:
    config = load(
        write_pool,
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


def test_backend_defaults_by_type(write_pool: PoolWriter) -> None:
    config = load(
        write_pool,
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
    local = config.backends["local"]
    assert isinstance(local, LlamaCppBackend)
    assert local.max_concurrency == local.replicas * local.slots  # every slot of every server busy
    assert missing_api_keys(config, environ={"DEEPSEEK_API_KEY": "x"}) == []
    assert missing_api_keys(config, environ={"DEEPSEEK_API_KEY": ""}) == ["DEEPSEEK_API_KEY"]


def test_left_out_limits_are_the_serving_runners_own_defaults(write_pool: PoolWriter) -> None:
    """One place for a protocol's defaults: the runner class; the pool file inherits them."""
    from runners.protocols.ollama import OllamaRunner
    from runners.protocols.openai_compat import OpenAICompatRunner

    config = load(
        write_pool,
        """backends:
  ollama:
    type: ollama
    base_url: http://127.0.0.1:11434
  ollama_fast:
    type: ollama
    base_url: http://127.0.0.1:11435
    timeout_s: 30
    max_concurrency: 2
  api:
    type: openai
    base_url: https://api.example.com/v1
models:
  - {name: m, backend: ollama}
""",
    )
    ollama, fast, api = (config.backends[n] for n in ("ollama", "ollama_fast", "api"))
    assert (ollama.timeout_s, ollama.max_concurrency) == (OllamaRunner.default_timeout_s, 1) == (300.0, 1)
    assert (fast.timeout_s, fast.max_concurrency) == (30.0, 2)
    assert (api.timeout_s, api.max_concurrency) == (OpenAICompatRunner.default_timeout_s, 8)


def test_inline_judge_on_another_backend(write_pool: PoolWriter) -> None:
    config = load(
        write_pool,
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


def test_yes_no_on_off_are_words_for_strings_and_booleans_for_bools(write_pool: PoolWriter) -> None:
    config = load(
        write_pool,
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


def test_unknown_backend(write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
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
    assert_issue(err, 9, "models[2].backend", "unknown backend 'vllm2'", "declared backends: local, deepseek")


def test_duplicate_model_name_points_at_second(write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
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


def test_unknown_key_suggests_the_close_one(write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
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


def test_unknown_key_without_close_match_lists_allowed(write_pool: PoolWriter) -> None:
    err = error_of(write_pool, LOCAL + "models: []\ncolour: red\n")
    assert_issue(err, 5, "colour", "unknown key 'colour'", "allowed keys: backends, defaults, models, judge")


def test_key_for_another_backend_type(write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
        LOCAL
        + """\
    base_url: http://localhost:8080
models:
  - {name: a, backend: local, gguf: gemma3-270m}
""",
    )
    assert_issue(err, 4, "backends.local.base_url", "run time")


def test_wrong_types(write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
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


def test_missing_required_fields(write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
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


def test_missing_top_level_block(write_pool: PoolWriter) -> None:
    err = error_of(write_pool, LOCAL)
    assert_issue(err, 1, "models", "required field 'models' is missing")


def test_unknown_backend_type(write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
        """\
backends:
  v:
    base_url: http://localhost:8000/v1
    type: tgi
models:
  - {name: a, backend: v}
""",
    )
    assert_issue(err, 4, "backends.v.type", "unknown backend type 'tgi'", "openai")


def test_yaml_syntax_error_has_line_and_column(tmp_path: Path, write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
        """\
backends:
  local:
    type: llamacpp
   n_ctx: 10
""",
    )
    (issue,) = err.issues
    assert issue.line == 4 and issue.column is not None
    assert str(err).startswith(f"{tmp_path / 'model_pool.yaml'}:4:") and "YAML syntax error" in str(err)


def test_duplicate_yaml_key(write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
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
def test_empty_file(write_pool: PoolWriter, text: str) -> None:
    err = error_of(write_pool, text)
    assert "model_pool.yaml:1:" in str(err) and "empty" in str(err)


@pytest.mark.parametrize("text,word", [("- a\n- b\n", "a list"), ("just text\n", "a single value")])
def test_top_level_not_a_mapping(write_pool: PoolWriter, text: str, word: str) -> None:
    err = error_of(write_pool, text)
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
def test_api_key_env_that_looks_like_a_key_is_rejected(write_pool: PoolWriter, value: str) -> None:
    err = error_of(
        write_pool,
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


def test_api_key_in_the_file_gets_the_env_var_hint(write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
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


def test_unsafe_model_name(write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
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


def test_backend_specific_model_keys(write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
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


def test_defaults_think_applies_to_ollama_models_only(write_pool: PoolWriter) -> None:
    config = load(
        write_pool,
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


def test_judge_errors(write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
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
        write_pool,
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
        write_pool,
        LOCAL
        + """\
models:
  - {name: qwen, backend: local, gguf: gemma3-270m}
judge:
  temperature: 0
""",
    )
    assert_issue(err, 6, "judge.model", "pool model name")


def test_many_errors_are_all_reported_in_line_order(write_pool: PoolWriter) -> None:
    err = error_of(
        write_pool,
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


def test_fingerprint_is_stable_and_ignores_notes_and_key_names(write_pool: PoolWriter) -> None:
    base = load(write_pool, POOL_FOR_FINGERPRINT).fingerprint()
    assert len(base) == 64 and base == load(write_pool, POOL_FOR_FINGERPRINT).fingerprint()
    variants = {
        "notes": POOL_FOR_FINGERPRINT.replace("notes: first", "notes: something else"),
        "key var": POOL_FOR_FINGERPRINT.replace("DEEPSEEK_API_KEY", "DS_KEY"),
        "order": POOL_FOR_FINGERPRINT.replace("  - {name: a, backend: local, gguf: gemma3-270m, notes: first}\n", "")
        + "  - {name: a, backend: local, gguf: gemma3-270m}\n",
        "explicit default": POOL_FOR_FINGERPRINT.replace(
            "model: deepseek-chat}", "model: deepseek-chat, max_tokens: 200}"
        ),
    }
    for what, text in variants.items():
        assert load(write_pool, text).fingerprint() == base, what
    changed = POOL_FOR_FINGERPRINT.replace("max_tokens: 200", "max_tokens: 201")
    assert load(write_pool, changed).fingerprint() != base


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


def test_a_base_model_cannot_judge(write_pool):
    path = write_pool(
        "backends:\n  local:\n    type: llamacpp\nmodels:\n  - name: g\n    backend: local\n"
        "    gguf: gemma3-270m\n    mode: completion\njudge:\n  model: g\n",
        name="pool.yaml",
    )
    with pytest.raises(PoolConfigError, match=r"pool.yaml:10: judge.model: 'g' is a completion \(base\) model"):
        load_pool(path)


# ---- malformed pools: exit-2 errors, located, naming the field, never echoing a secret -----

FAKE_KEY = "sk-live-SECRET123"
URL_PASSWORD = "hunter2"
URL_USER = "alice"
SECRETS = (FAKE_KEY, "SECRET123", URL_PASSWORD, URL_USER)


def api_pool(**fields: str) -> str:
    """An openai backend at line 2 whose keys (line 3 on) are the defaults overridden by
    ``fields`` (YAML values as written), and one model on it."""
    backend = {"type": "openai", "base_url": "http://localhost:8000/v1", **fields}
    lines = "".join(f"    {key}: {value}\n" for key, value in backend.items())
    return f"backends:\n  api:\n{lines}models:\n  - {{name: m, backend: api}}\n"


def line_of(text: str, key: str) -> int:
    """1-based line of the first ``key:`` in the file."""
    lines = enumerate(text.splitlines(), 1)
    return next(n for n, line in lines if line.strip().removeprefix("- ").startswith(key))


LLAMA_MODEL = "models:\n  - {name: m, backend: local, gguf: gemma3-270m}\n"
OLLAMA = "backends:\n  ol:\n    type: ollama\n    base_url: http://localhost:11434\n"

# (case id, pool text, field, words the message must contain); the line is where the field's
# last key first appears in the text.
MALFORMED = [
    # base_url
    ("url-space", api_pool(base_url='"http://local host:8000/v1"'), "backends.api.base_url", ["spaces"]),
    ("url-trailing-space", api_pool(base_url='"http://localhost:8000/v1 "'), "backends.api.base_url", ["spaces"]),
    ("url-tab", api_pool(base_url='"http://localhost:8000/\\tv1"'), "backends.api.base_url", ["control characters"]),
    (
        "url-credentials",
        api_pool(base_url=f"http://{URL_USER}:{URL_PASSWORD}@localhost/v1"),
        "backends.api.base_url",
        ["user name or password", "not printed", "api_key_env"],
    ),
    (
        "url-key-as-user",
        api_pool(base_url=f"https://{FAKE_KEY}@api.example.com/v1"),
        "backends.api.base_url",
        ["user name or password"],
    ),
    (
        "url-credentials-and-space",
        api_pool(base_url=f'"http://{URL_USER}:{URL_PASSWORD}@local host/v1"'),
        "backends.api.base_url",
        ["user name or password"],
    ),
    (
        "url-credentials-no-scheme",
        api_pool(base_url=f"{URL_USER}:{URL_PASSWORD}@localhost:8000/v1"),
        "backends.api.base_url",
        ["user name or password"],
    ),
    (
        "url-key-in-query",
        api_pool(base_url=f"https://api.example.com/v1?key={FAKE_KEY}"),
        "backends.api.base_url",
        ["query", "not printed"],
    ),
    ("url-port-0", api_pool(base_url="http://localhost:0/v1"), "backends.api.base_url", ["port '0'", "1 to 65535"]),
    (
        "url-port-65536",
        api_pool(base_url="http://localhost:65536/v1"),
        "backends.api.base_url",
        ["port '65536'", "1 to 65535"],
    ),
    ("url-port-huge", api_pool(base_url="http://127.0.0.1:800000"), "backends.api.base_url", ["1 to 65535"]),
    ("url-port-text", api_pool(base_url="http://localhost:80a/v1"), "backends.api.base_url", ["port '80a'"]),
    ("url-port-empty", api_pool(base_url="http://localhost:/v1"), "backends.api.base_url", ["port ''"]),
    ("url-ipv6-port", api_pool(base_url='"http://[::1]:70000/v1"'), "backends.api.base_url", ["1 to 65535"]),
    ("url-no-scheme", api_pool(base_url="localhost:8000/v1"), "backends.api.base_url", ["http:// or https://"]),
    ("url-ftp", api_pool(base_url="ftp://example.com/v1"), "backends.api.base_url", ["http:// or https://"]),
    ("url-one-slash", api_pool(base_url="http:/localhost/v1"), "backends.api.base_url", ["http:// or https://"]),
    ("url-no-host", api_pool(base_url="http:///v1"), "backends.api.base_url", ["no host"]),
    ("url-only-port", api_pool(base_url="http://:8000/v1"), "backends.api.base_url", ["no host"]),
    (
        "ollama-url-port",
        OLLAMA.replace("11434", "0") + "models:\n  - {name: m, backend: ol}\n",
        "backends.ol.base_url",
        ["port '0'"],
    ),
    # non-finite and out-of-range numbers
    ("timeout-inf", api_pool(timeout_s=".inf"), "backends.api.timeout_s", ["finite number", "'.inf'"]),
    ("timeout-nan", api_pool(timeout_s=".nan"), "backends.api.timeout_s", ["finite number"]),
    ("timeout-too-long", api_pool(timeout_s="3601"), "backends.api.timeout_s", ["less than or equal to 3600"]),
    ("timeout-zero", api_pool(timeout_s="0"), "backends.api.timeout_s", ["greater than 0"]),
    ("rpm-inf", api_pool(requests_per_minute=".Inf"), "backends.api.requests_per_minute", ["finite number"]),
    (
        "llamacpp-timeout-nan",
        LOCAL + "    timeout_s: .NaN\n" + LLAMA_MODEL,
        "backends.local.timeout_s",
        ["finite number"],
    ),
    (
        "temperature-nan",
        LOCAL + "models:\n  - name: m\n    backend: local\n    gguf: gemma3-270m\n    temperature: .nan\n",
        "models[0].temperature",
        ["finite number"],
    ),
    ("top-p-inf-default", LOCAL + "defaults:\n  top_p: .inf\n" + LLAMA_MODEL, "defaults.top_p", ["finite number"]),
    (
        "judge-temperature-neg-inf",
        LOCAL + LLAMA_MODEL + "judge:\n  model: m\n  temperature: -.inf\n",
        "judge.temperature",
        ["finite number"],
    ),
    # max_concurrency, for every backend type
    (
        "openai-concurrency",
        api_pool(max_concurrency="257"),
        "backends.api.max_concurrency",
        ["less than or equal to 256"],
    ),
    (
        "ollama-concurrency",
        OLLAMA + "    max_concurrency: 1000\nmodels:\n  - {name: m, backend: ol}\n",
        "backends.ol.max_concurrency",
        ["256"],
    ),
    (
        "llamacpp-concurrency",
        LOCAL + "    max_concurrency: 300\n" + LLAMA_MODEL,
        "backends.local.max_concurrency",
        ["256"],
    ),
    # api_key_env
    (
        "key-pasted",
        api_pool(api_key_env=FAKE_KEY),
        "backends.api.api_key_env",
        ["NAME of an environment variable", "not printed"],
    ),
    ("key-pasted-quoted", api_pool(api_key_env=f'"Bearer {FAKE_KEY}"'), "backends.api.api_key_env", ["not a key"]),
    ("key-env-spaces", api_pool(api_key_env='"DEEPSEEK API KEY"'), "backends.api.api_key_env", ["letters, digits, _"]),
    (
        "key-env-dashes",
        api_pool(api_key_env="DEEPSEEK-API-KEY"),
        "backends.api.api_key_env",
        ["NAME of an environment variable"],
    ),
    (
        "key-env-final-newline",
        api_pool(api_key_env='"DEEPSEEK_API_KEY\\n"'),
        "backends.api.api_key_env",
        ["not printed"],
    ),
    ("key-env-digit-first", api_pool(api_key_env="1KEY"), "backends.api.api_key_env", ["not starting with a digit"]),
    ("key-env-too-long", api_pool(api_key_env="K" * 129), "backends.api.api_key_env", ["at most 128"]),
    (
        "key-env-random-token",
        api_pool(api_key_env="a8F3kD92mZq71LxP0sWe4RtYSECRET123"),
        "backends.api.api_key_env",
        ["not a key"],
    ),
    (
        "ollama-key-env",
        OLLAMA + f"    api_key_env: {FAKE_KEY}\nmodels:\n  - {{name: m, backend: ol}}\n",
        "backends.ol.api_key_env",
        ["not printed"],
    ),
    # the response caps
    (
        "bytes-too-small",
        api_pool(max_response_bytes="1023"),
        "backends.api.max_response_bytes",
        ["greater than or equal to 1024", "1 GiB"],
    ),
    (
        "bytes-too-big",
        api_pool(max_response_bytes=str(2**30 + 1)),
        "backends.api.max_response_bytes",
        ["less than or equal to 1073741824"],
    ),
    ("bytes-as-text", api_pool(max_response_bytes="8MiB"), "backends.api.max_response_bytes", ["whole number"]),
    (
        "chars-too-small",
        LOCAL + "    max_answer_chars: 999\n" + LLAMA_MODEL,
        "backends.local.max_answer_chars",
        ["greater than or equal to 1000"],
    ),
    (
        "chars-too-big",
        OLLAMA + "    max_answer_chars: 10000001\nmodels:\n  - {name: m, backend: ol}\n",
        "backends.ol.max_answer_chars",
        ["less than or equal to 10000000"],
    ),
    ("chars-float", api_pool(max_answer_chars="1500.5"), "backends.api.max_answer_chars", ["whole number"]),
    ("chars-inf", api_pool(max_answer_chars=".inf"), "backends.api.max_answer_chars", ["whole number"]),
    # kinds that were already rejected
    ("key-in-file", api_pool(api_key=FAKE_KEY), "backends.api.api_key", ["unknown key", "api_key_env"]),
    (
        "name-final-newline",
        LOCAL + 'models:\n  - name: "m\\n"\n    backend: local\n    gguf: gemma3-270m\n',
        "models[0].name",
        ["cannot name a file"],
    ),
    ("retries", api_pool(max_retries="21"), "backends.api.max_retries", ["20"]),
    (
        "unknown-backend-key",
        api_pool(max_concurency="4"),
        "backends.api.max_concurency",
        ["did you mean 'max_concurrency'?"],
    ),
    (
        "base-url-on-llamacpp",
        LOCAL + "    base_url: http://localhost:8080\n" + LLAMA_MODEL,
        "backends.local.base_url",
        ["run time"],
    ),
]


@pytest.mark.parametrize("text,field,words", [case[1:] for case in MALFORMED], ids=[case[0] for case in MALFORMED])
def test_malformed_pool_is_a_located_error_without_secrets(
    write_pool: PoolWriter, text: str, field: str, words: list[str]
) -> None:
    err = error_of(write_pool, text)
    assert_issue(err, line_of(text, field.rsplit(".", 1)[-1] + ":"), field, *words)
    # the whole error, the ValidationError it replaced (printed by accident, say) and every
    # issue: no secret, no pydantic input echo
    texts = [str(err), repr(err), *map(repr, err.issues), str(err.__context__ or "")]
    for text_shown in texts:
        for secret in SECRETS:
            assert secret not in text_shown, f"{secret!r} leaked: {text_shown}"
        assert "input_value" not in text_shown


def test_the_table_covers_enough_cases() -> None:
    assert len(MALFORMED) >= 25 and len({case[0] for case in MALFORMED}) == len(MALFORMED)


def test_raw_validation_error_does_not_echo_a_pasted_key() -> None:
    """Code that validates a dict directly (not through load_pool) still never prints the key."""
    from pydantic import ValidationError

    data = {
        "backends": {
            "api": {
                "type": "openai",
                "base_url": f"http://{URL_USER}:{URL_PASSWORD}@localhost/v1",
                "api_key_env": FAKE_KEY,
            }
        },
        "models": [{"name": "m", "backend": "api"}],
    }
    with pytest.raises(ValidationError) as info:
        PoolConfig.model_validate(data)
    assert FAKE_KEY not in str(info.value) and URL_PASSWORD not in str(info.value)
    assert len(info.value.errors()) == 2


def test_bad_pool_exits_2_before_any_request(
    tmp_path: Path, write_pool: PoolWriter, capsys: pytest.CaptureFixture[str]
) -> None:
    from pool.run import main

    pool = write_pool(
        api_pool(base_url=f"http://{URL_USER}:{URL_PASSWORD}@localhost:1/v1", api_key_env=FAKE_KEY, timeout_s=".inf"),
    )
    out = tmp_path / "run"
    assert main(["--pool", str(pool), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{pool}:4: backends.api.base_url:" in err
    assert f"{pool}:5: backends.api.api_key_env:" in err
    assert f"{pool}:6: backends.api.timeout_s:" in err
    assert URL_PASSWORD not in err and FAKE_KEY not in err
    assert not out.exists()  # no run directory, so no run started


@pytest.mark.parametrize(
    "url,stored",
    [
        ("https://api.deepseek.com/v1/", "https://api.deepseek.com/v1"),
        ("http://127.0.0.1:65535", "http://127.0.0.1:65535"),
        ("http://localhost:1/v1", "http://localhost:1/v1"),
        ('"http://[::1]:8080/v1"', "http://[::1]:8080/v1"),
        ("http://my_host.internal:11434", "http://my_host.internal:11434"),
        ("HTTPS://API.EXAMPLE.COM/v1", "HTTPS://API.EXAMPLE.COM/v1"),
        ("http://localhost/v1/models@v2", "http://localhost/v1/models@v2"),
    ],
)
def test_valid_base_urls(write_pool: PoolWriter, url: str, stored: str) -> None:
    config = load(write_pool, api_pool(base_url=url))
    assert config.backends["api"].base_url == stored  # type: ignore[union-attr]


@pytest.mark.parametrize("name", ["DEEPSEEK_API_KEY", "HF_TOKEN", "BEARER_TOKEN", "GITHUB_PAT_TOKEN", "_K", "K" * 128])
def test_env_var_names_are_accepted(write_pool: PoolWriter, name: str) -> None:
    config = load(write_pool, api_pool(api_key_env=name))
    assert missing_api_keys(config, environ={}) == [name]


def test_response_caps_defaults_bounds_and_every_backend_type(write_pool: PoolWriter) -> None:
    config = load(
        write_pool,
        LOCAL
        + """\
    max_concurrency: 256
    max_response_bytes: 1024
    max_answer_chars: 1000
  ol: {type: ollama, base_url: "http://localhost:11434", max_response_bytes: 1073741824,
       max_answer_chars: 10000000, timeout_s: 3600}
  api: {type: openai, base_url: "http://localhost:8000/v1", api_key_env: K}
models:
  - {name: m, backend: local, gguf: gemma3-270m}
""",
    )
    local, ollama, api = (config.backends[n] for n in ("local", "ol", "api"))
    assert (local.max_concurrency, local.max_response_bytes, local.max_answer_chars) == (
        256,
        1024,
        1000,
    )
    assert (ollama.max_response_bytes, ollama.max_answer_chars, ollama.timeout_s) == (
        2**30,
        10_000_000,
        3600.0,
    )
    assert (api.max_response_bytes, api.max_answer_chars) == (8 * 2**20, 200_000)


@pytest.mark.parametrize("setting", ["max_response_bytes: 4096", "max_answer_chars: 5000", "timeout_s: 30"])
def test_fingerprint_covers_backend_limits_and_caps(write_pool: PoolWriter, setting: str) -> None:
    base = load(write_pool, POOL_FOR_FINGERPRINT).fingerprint()
    changed = POOL_FOR_FINGERPRINT.replace(
        "api_key_env: DEEPSEEK_API_KEY}", f"api_key_env: DEEPSEEK_API_KEY, {setting}}}"
    )
    assert load(write_pool, changed).fingerprint() != base
    default = "max_answer_chars: 200000" if "chars" in setting else "max_response_bytes: 8388608"
    same = POOL_FOR_FINGERPRINT.replace("api_key_env: DEEPSEEK_API_KEY}", f"api_key_env: DEEPSEEK_API_KEY, {default}}}")
    assert load(write_pool, same).fingerprint() == base  # an explicit default is the default
