"""A table of malformed inputs to ``python -m pool.run`` and a harness that runs one in-process.

Every case is bad input, so the README's contract is the same for all of them: exit code 2, no
Python traceback, a message that names the file, flag or field concerned, and no secret echoed.
Four groups: pool files, data files (``--data``), CLI arguments, and run folders (``--resume``).

``run_case(case, tmp_path)`` builds the case's files under ``tmp_path`` (``setup`` returns the
argv), then calls ``pool.run.main(argv)`` with stdout, stderr and log records captured, the working
directory set to ``tmp_path`` (so nothing lands in the repository) and ``$MEDPOOL_CACHE_DIR``
pointed into ``tmp_path``. The only backend any case can reach is a closed 127.0.0.1 port, so a
case the product wrongly accepts fails fast with exit 1 (or 0 under ``--dry-run``), never a request
off this machine. ``summary(results)`` counts the outcomes per group.

Run ``python -m bench.harness.malformed_cases`` for the per-group table and every deviation.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import socket
import sqlite3
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SECRET = "sk-live-SECRET123"
# Baseline pools name this variable, and the harness sets it to SECRET, so any error path that
# printed a backend's key would be caught too.
SECRET_ENV = "MEDPOOL_MALFORMED_TEST_KEY"
# Key variables the harness unsets, and sets to "", for the preflight cases.
UNSET_ENV = "MEDPOOL_MALFORMED_UNSET_KEY"
EMPTY_ENV = "MEDPOOL_MALFORMED_EMPTY_KEY"
TRACEBACK_MARK = "Traceback (most recent call last)"
GROUPS = ("pool", "data", "cli", "run_folder")


@dataclass(frozen=True)
class Case:
    """One malformed input: ``setup(tmp_path)`` writes its files and returns the argv.

    ``expect_in_message`` is a substring the error output must contain (the file, flag or field
    concerned). ``after``, when given, inspects ``tmp_path`` once the call returned and describes
    a side effect that should not have happened (or returns None).
    """

    group: str
    name: str
    setup: Callable[[Path], list[str]]
    expect_in_message: str
    after: Callable[[Path], str | None] | None = None

    @property
    def id(self) -> str:
        return f"{self.group}/{self.name}"


# ---- building blocks -------------------------------------------------------------------------


def closed_port() -> int:
    """A 127.0.0.1 port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pool_text(port: int | None = None, *, backend: str = "", model: str = "", extra: str = "") -> str:
    """A valid pool: one OpenAI-compatible backend on a closed local port, one model.

    ``backend`` and ``model`` are extra indented lines for the backend and the model entry;
    ``extra`` is appended at the top level.
    """
    port = port or closed_port()
    return (
        "backends:\n"
        "  dead:\n"
        "    type: openai\n"
        f"    base_url: http://127.0.0.1:{port}/v1\n"
        f"    api_key_env: {SECRET_ENV}\n"
        "    max_retries: 0\n"
        "    timeout_s: 5\n"
        f"{backend}"
        "models:\n"
        "  - name: alpha\n"
        "    backend: dead\n"
        "    max_tokens: 16\n"
        f"{model}"
        f"{extra}"
    )


def backend_with(line: str) -> str:
    """A pool whose only backend has one more (or one overriding) line."""
    return _replace_backend_line(pool_text(), line)


def _replace_backend_line(text: str, line: str) -> str:
    key = line.strip().split(":", 1)[0] + ":"
    lines = text.splitlines(keepends=True)
    start, end = 2, lines.index("models:\n")
    for index in range(start, end):
        if lines[index].strip().startswith(key):
            lines[index] = f"    {line.strip()}\n"
            return "".join(lines)
    lines.insert(end, f"    {line.strip()}\n")
    return "".join(lines)


def item(local_id: str | int = "q1", **fields: Any) -> dict[str, Any]:
    """A valid medpool JSONL single-choice item, with fields overridden (None removes one)."""
    record: dict[str, Any] = {
        "id": local_id,
        "task": "mcq",
        "track": "exam",
        "gold_type": "single_choice",
        "question": "Which drug is contraindicated in pregnancy?",
        "options": {"A": "labetalol", "B": "enalapril"},
        "gold": "B",
        "domain": "cardiology:hypertension",
    }
    record.update(fields)
    return {k: v for k, v in record.items() if v is not None}


GOOD_ITEMS = [
    item("q1"),
    item("q2", gold="A"),
    item(
        "q3",
        task="cloze_fill",
        track="capability",
        gold_type="cloze",
        options=None,
        question="Fill: ___",
        gold="x",
        domain="neurology:stroke",
    ),
]


def write_items(path: Path, records: Sequence[dict[str, Any] | str]) -> Path:
    """A JSONL file; a str record is written verbatim as one line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_pool(tmp: Path, text: str | bytes, name: str = "pool.yaml") -> Path:
    path = tmp / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def base_args(
    tmp: Path, *, pool: Path | None = None, data: Sequence[Path] | None = None, dry_run: bool = True
) -> list[str]:
    """--pool, --data, --out under tmp (and --dry-run: every input check runs before it)."""
    pool = pool if pool is not None else write_pool(tmp, pool_text())
    data = data if data is not None else [write_items(tmp / "items.jsonl", GOOD_ITEMS)]
    argv = ["--pool", str(pool), "--data", *map(str, data), "--out", str(tmp / "run")]
    return argv + (["--dry-run"] if dry_run else [])


def real_run(tmp: Path, *extra: str, name: str = "run") -> Path:
    """A real small run folder: the only backend is a closed port, so the run ends with exit 1."""
    from pool.run import main

    pool = write_pool(tmp, pool_text())
    data = write_items(tmp / "items.jsonl", GOOD_ITEMS)
    run_dir = tmp / name
    argv = ["--pool", str(pool), "--data", str(data), "--out", str(run_dir), "--no-routing", "--limit", "2", *extra]
    with _captured() as (out, err):
        code = main(argv)
    if code != 1 or not (run_dir / "run.sqlite").is_file():
        raise RuntimeError(f"setup run ended with {code} (expected 1):\n{out.getvalue()}\n{err.getvalue()}")
    return run_dir


# ---- pool files ----------------------------------------------------------------------------------


def _pool_case(name: str, text: str | bytes, expect: str) -> Case:
    return Case("pool", name, lambda tmp: base_args(tmp, pool=write_pool(tmp, text)), expect)


POOL_CASES: list[Case] = [
    _pool_case("yaml_unclosed_flow_list", "backends:\n  dead: [type: openai\nmodels: []\n", "pool.yaml:"),
    _pool_case("yaml_tab_indentation", pool_text().replace("    type: openai", "\ttype: openai"), "pool.yaml:"),
    _pool_case("yaml_bad_indentation", pool_text().replace("    max_tokens: 16", "   max_tokens: 16"), "pool.yaml:"),
    _pool_case("yaml_unterminated_quote", pool_text().replace("name: alpha", 'name: "alpha'), "pool.yaml:"),
    _pool_case(
        "yaml_syntax_error_on_a_line_holding_a_key",
        pool_text().replace(f"api_key_env: {SECRET_ENV}", f"api_key_env: {SECRET}: x"),
        "pool.yaml:5",
    ),
    _pool_case("yaml_duplicate_key", pool_text(model="    max_tokens: 32\n"), "duplicate key 'max_tokens'"),
    _pool_case("yaml_two_documents", pool_text() + "---\n" + pool_text(), "pool.yaml"),
    _pool_case(
        "yaml_python_object_tag",
        pool_text(model="    notes: !!python/object/apply:os.system [echo hi]\n"),
        "pool.yaml:",
    ),
    _pool_case("empty_file", "", "pool.yaml"),
    _pool_case("only_comments", "# nothing here\n# at all\n", "pool.yaml"),
    _pool_case("only_document_marker", "---\n", "pool.yaml"),
    _pool_case("top_level_list", "- backends\n- models\n", "pool.yaml:1"),
    _pool_case("top_level_scalar", "just some text\n", "pool.yaml:1"),
    _pool_case("binary_garbage", bytes(range(256)) * 8, "pool.yaml"),
    _pool_case("latin1_bytes", pool_text(model="    notes: caf\xe9\n").encode("latin-1"), "pool.yaml"),
    Case("pool", "directory_instead_of_file", lambda tmp: base_args(tmp, pool=_mkdir(tmp / "pool.yaml")), "pool.yaml"),
    Case("pool", "missing_file", lambda tmp: base_args(tmp, pool=tmp / "no-such-pool.yaml"), "no-such-pool.yaml"),
    _pool_case("unknown_top_level_key", pool_text(extra="modles: []\n"), "modles"),
    _pool_case("unknown_backend_key", backend_with("max_concurency: 4"), "max_concurency"),
    _pool_case("unknown_model_key", pool_text(model="    temprature: 0.5\n"), "temprature"),
    _pool_case("api_key_field_holding_a_key", backend_with(f"api_key: {SECRET}"), "api_key"),
    _pool_case("missing_backends", "models:\n  - name: alpha\n    backend: dead\n", "backends"),
    _pool_case("models_empty_list", pool_text().split("models:")[0] + "models: []\n", "models"),
    _pool_case(
        "models_is_a_mapping", pool_text().split("models:")[0] + "models:\n  alpha: {backend: dead}\n", "models"
    ),
    _pool_case("backends_is_a_list", "backends:\n  - dead\nmodels:\n  - name: alpha\n    backend: dead\n", "backends"),
    _pool_case("model_names_unknown_backend", pool_text().replace("backend: dead", "backend: vllm2"), "vllm2"),
    _pool_case("unknown_backend_type", backend_with("type: tgi"), "tgi"),
    _pool_case("duplicate_model_names", pool_text(extra="  - name: alpha\n    backend: dead\n"), "alpha"),
    _pool_case("model_name_with_path_traversal", pool_text().replace("name: alpha", "name: ../../etc"), "name"),
    _pool_case("enabled_not_a_boolean", pool_text(model="    enabled: maybe\n"), "enabled"),
    _pool_case("max_tokens_not_a_number", pool_text().replace("max_tokens: 16", "max_tokens: many"), "max_tokens"),
    _pool_case("max_concurrency_is_text", backend_with("max_concurrency: eight"), "max_concurrency"),
    _pool_case("max_concurrency_negative", backend_with("max_concurrency: -1"), "max_concurrency"),
    _pool_case("max_concurrency_zero", backend_with("max_concurrency: 0"), "max_concurrency"),
    _pool_case("max_concurrency_huge", backend_with("max_concurrency: 100000"), "max_concurrency"),
    _pool_case("max_concurrency_astronomic", backend_with("max_concurrency: " + "9" * 40), "max_concurrency"),
    _pool_case("max_retries_too_many", backend_with("max_retries: 1000"), "max_retries"),
    _pool_case("timeout_inf", backend_with("timeout_s: .inf"), "timeout_s"),
    _pool_case("timeout_nan", backend_with("timeout_s: .nan"), "timeout_s"),
    _pool_case("timeout_negative", backend_with("timeout_s: -3"), "timeout_s"),
    _pool_case("timeout_a_day", backend_with("timeout_s: 86400"), "timeout_s"),
    _pool_case("requests_per_minute_negative", backend_with("requests_per_minute: -5"), "requests_per_minute"),
    _pool_case("temperature_inf_in_defaults", pool_text(extra="defaults:\n  temperature: .inf\n"), "temperature"),
    _pool_case("base_url_without_scheme", backend_with("base_url: 127.0.0.1:8000/v1"), "base_url"),
    _pool_case("base_url_ftp", backend_with("base_url: ftp://127.0.0.1/v1"), "base_url"),
    _pool_case("base_url_port_out_of_range", backend_with("base_url: http://127.0.0.1:70000/v1"), "base_url"),
    _pool_case("base_url_with_space", backend_with("base_url: 'http://127.0.0.1:8000/my v1'"), "base_url"),
    _pool_case(
        "base_url_with_userinfo_password", backend_with(f"base_url: http://me:{SECRET}@127.0.0.1:8000/v1"), "base_url"
    ),
    _pool_case(
        "base_url_with_key_in_query", backend_with(f"base_url: http://127.0.0.1:8000/v1?api_key={SECRET}"), "base_url"
    ),
    _pool_case("base_url_holding_a_pasted_key", backend_with(f"base_url: {SECRET}"), "base_url"),
    _pool_case("api_key_env_holding_a_key", backend_with(f"api_key_env: {SECRET}"), "api_key_env"),
    _pool_case(
        "api_key_env_holding_a_prefixless_key",
        backend_with("api_key_env: Ab3dEf9hIj2kLm5nOp8qRs1tUv4wXy7z"),
        "api_key_env",
    ),
    _pool_case("api_key_env_is_a_list_with_a_key", backend_with(f"api_key_env: [{SECRET}]"), "api_key_env"),
    _pool_case("judge_names_unknown_model", pool_text(extra="judge:\n  model: ghost-judge\n"), "ghost-judge"),
    _pool_case("judge_names_unknown_backend", pool_text(extra="judge:\n  backend: nowhere\n  model: x\n"), "nowhere"),
    _pool_case(
        "llamacpp_unknown_gguf",
        "backends:\n  local:\n    type: llamacpp\nmodels:\n  - name: tiny\n    backend: local\n    gguf: nosuch\n",
        "gguf",
    ),
    *(
        _pool_case(
            f"llamacpp_replicas_{name}",
            f"backends:\n  local:\n    type: llamacpp\n    replicas: {value}\n"
            "models:\n  - name: tiny\n    backend: local\n    gguf: gemma3-270m\n",
            "backends.local.replicas",
        )
        for name, value in (("zero", "0"), ("negative", "-1"), ("text", '"two"'), ("too_many", "1000"))
    ),
    _pool_case(
        "llamacpp_fewer_requests_than_replicas",
        "backends:\n  local:\n    type: llamacpp\n    replicas: 2\n    max_concurrency: 1\n"
        "models:\n  - name: tiny\n    backend: local\n    gguf: gemma3-270m\n",
        "backends.local.max_concurrency",
    ),
]


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _no_run_folder(tmp: Path) -> str | None:
    return "the run folder was created" if (tmp / "run").exists() else None


def _preflight_case(name: str, text: str, expect: str, *, dry_run: bool = False) -> Case:
    """A pool that validates but cannot be used: refused before the run folder exists."""
    return Case(
        "pool",
        f"preflight_{name}",
        lambda tmp: base_args(tmp, pool=write_pool(tmp, text), dry_run=dry_run),
        expect,
        _no_run_folder,
    )


def _llamacpp_pool(gguf: str) -> str:
    return f"backends:\n  local:\n    type: llamacpp\nmodels:\n  - name: mine\n    backend: local\n    gguf: {gguf}\n"


PREFLIGHT_CASES: list[Case] = [
    _preflight_case(
        "key_variable_unset", backend_with(f"api_key_env: {UNSET_ENV}"), "pool.yaml:5: backends.dead.api_key_env"
    ),
    _preflight_case(
        "key_variable_empty", backend_with(f"api_key_env: {EMPTY_ENV}"), "pool.yaml:5: backends.dead.api_key_env"
    ),
    _preflight_case(
        "key_variable_unset_dry_run",
        backend_with(f"api_key_env: {UNSET_ENV}"),
        "backends.dead.api_key_env",
        dry_run=True,
    ),
    _preflight_case(
        "gguf_file_missing", _llamacpp_pool("/nonexistent/medpool/missing.gguf"), "pool.yaml:7: models[0].gguf"
    ),
]


# ---- data files ----------------------------------------------------------------------------------


def _data_case(name: str, records: Sequence[dict[str, Any] | str], expect: str, *extra: str) -> Case:
    def setup(tmp: Path) -> list[str]:
        return base_args(tmp, data=[write_items(tmp / "items.jsonl", records)]) + list(extra)

    return Case("data", name, setup, expect)


def _raw_data_case(name: str, content: bytes, expect: str, filename: str = "items.jsonl") -> Case:
    def setup(tmp: Path) -> list[str]:
        path = tmp / filename
        path.write_bytes(content)
        return base_args(tmp, data=[path])

    return Case("data", name, setup, expect)


def _two_files_with_same_id(tmp: Path) -> list[str]:
    first = write_items(tmp / "suite" / "a.jsonl", [item("q1")])
    write_items(tmp / "suite" / "b.jsonl", [item("q1", gold="A")])
    return base_args(tmp, data=[first.parent])


def _folder_without_items(tmp: Path) -> list[str]:
    folder = _mkdir(tmp / "notes")
    (folder / "README.txt").write_text("just notes\n", encoding="utf-8")
    (folder / "draft.md").write_text("# a task description\n", encoding="utf-8")
    return base_args(tmp, data=[folder])


def _bad_manifest(tmp: Path) -> list[str]:
    folder = tmp / "suite"
    write_items(folder / "items.jsonl", GOOD_ITEMS)
    (folder / "medpool-suite.yaml").write_text('files:\n  "*.jsonl": medpool_v9\n', encoding="utf-8")
    return base_args(tmp, data=[folder])


def _id_removed_by_task(tmp: Path) -> list[str]:
    """q3 exists (its stable id is <suite = folder name>/<task>/<id>) but --task mcq drops it."""
    return base_args(tmp) + ["--task", "mcq", "--id", f"{tmp.name}/cloze_fill/q3"]


DATA_CASES: list[Case] = [
    _data_case("broken_json_line", [item("q1"), '{"id": "q2", "task": "mcq",', item("q3")], "items.jsonl:2"),
    _data_case("line_is_a_json_list", [item("q1"), '["q2", "mcq"]'], "items.jsonl:2"),
    _data_case("trailing_garbage_after_object", [json.dumps(item("q1")) + " xyz"], "items.jsonl:1"),
    _data_case("id_is_a_list", [item(["q", 1])], "'id'"),
    _data_case("id_is_a_boolean", [item(True)], "'id'"),
    _data_case("task_missing", [item("q1", task=None)], "'task'"),
    _data_case("task_is_a_number", [item("q1", task=7)], "'task'"),
    _data_case("gold_missing", [item("q1", gold=None)], "'gold'"),
    _data_case("gold_not_an_option", [item("q1", gold="Z")], "gold"),
    _data_case("options_is_a_string", [item("q1", options="A or B")], "options"),
    _data_case("question_and_messages_missing", [item("q1", question=None)], "question"),
    _data_case(
        "messages_not_ending_with_user",
        [item("q1", question=None, messages=[{"role": "assistant", "content": "hi"}])],
        "messages",
    ),
    _data_case("meta_is_a_list", [item("q1", meta=[1, 2])], "'meta'"),
    _data_case("answer_budget_zero", [item("q1"), item("q2", max_tokens=0)], "items.jsonl:2"),
    _data_case("answer_budget_is_text", [item("q1", max_tokens="32")], "'max_tokens'"),
    _data_case("unknown_field", [item("q1", golds="B")], "golds"),
    _data_case("unknown_gold_type", [item("q1", gold_type="essay")], "gold_type"),
    _data_case("unknown_track", [item("q1", track="research")], "track"),
    _data_case("domain_without_topic", [item("q1", domain="cardiology")], "domain"),
    _data_case("duplicate_ids_in_one_file", [item("q1"), item("q2"), item("q1", gold="A")], "duplicate id"),
    Case("data", "duplicate_ids_across_files", _two_files_with_same_id, "a.jsonl"),
    _data_case("all_items_unscorable", [item("q1", scorable=False, skip_reason="draft")], "none scorable"),
    _data_case(
        "only_orchestration_items",
        [item("t1", task="tool", track="orchestration", gold_type="tool_decision", options=None, gold="call")],
        "--orchestration",
    ),
    _raw_data_case("empty_file", b"", "items.jsonl"),
    _raw_data_case("only_blank_lines", b"\n\n   \n\t\n", "items.jsonl"),
    _raw_data_case(
        "non_utf8_bytes",
        json.dumps(item("q1", question="caf\xe9"), ensure_ascii=False).encode("latin-1") + b"\n",
        "items.jsonl",
    ),
    _raw_data_case("binary_garbage", bytes(range(256)) * 4, "items.jsonl"),
    _raw_data_case("yaml_file_of_garbage", b"key: [unclosed\n  - x: {\n", "items.yaml", filename="items.yaml"),
    _raw_data_case("json_list_with_a_number", b'[{"id": 1}, 7]', "items.json", filename="items.json"),
    _raw_data_case("text_file_named_explicitly", b"What is the answer?\n", "notes.txt", filename="notes.txt"),
    Case("data", "folder_without_item_files", _folder_without_items, "notes"),
    Case("data", "empty_folder", lambda tmp: base_args(tmp, data=[_mkdir(tmp / "empty")]), "empty"),
    Case("data", "missing_path", lambda tmp: base_args(tmp, data=[tmp / "no-such-items.jsonl"]), "no-such-items.jsonl"),
    Case("data", "suite_manifest_names_unknown_format", _bad_manifest, "medpool-suite.yaml"),
    _data_case("task_filters_out_everything", GOOD_ITEMS, "--task", "--task", "no_such_task"),
    _data_case("domain_filters_out_everything", GOOD_ITEMS, "--domain", "--domain", "dermatology"),
    _data_case("track_filters_out_everything", GOOD_ITEMS, "--track", "--track", "tcm"),
    _data_case("unknown_id", GOOD_ITEMS, "--id", "--id", "items/mcq/q404"),
    Case("data", "id_removed_by_another_filter", _id_removed_by_task, "--id"),
]


# ---- CLI arguments -------------------------------------------------------------------------------


def _cli_case(
    name: str, expect: str, *extra: str, dry_run: bool = True, after: Callable[[Path], str | None] | None = None
) -> Case:
    return Case("cli", name, lambda tmp: base_args(tmp, dry_run=dry_run) + list(extra), expect, after)


def _resume_with(name: str, expect: str, *extra: str, run_extra: Sequence[str] = ()) -> Case:
    def setup(tmp: Path) -> list[str]:
        run_dir = real_run(tmp, *run_extra)
        return ["--resume", str(run_dir), *[a.replace("{tmp}", str(tmp)) for a in extra]]

    return Case("cli", name, setup, expect)


def _out_onto_file(tmp: Path) -> list[str]:
    (tmp / "run").write_text("precious\n", encoding="utf-8")
    return base_args(tmp, dry_run=False)


def _out_below_a_file(tmp: Path) -> list[str]:
    (tmp / "afile").write_text("precious\n", encoding="utf-8")
    argv = base_args(tmp, dry_run=False)
    argv[argv.index("--out") + 1] = str(tmp / "afile" / "run")
    return argv


def _out_onto_user_folder(tmp: Path) -> list[str]:
    _mkdir(tmp / "run")
    (tmp / "run" / "thesis.docx").write_text("precious\n", encoding="utf-8")
    return base_args(tmp, dry_run=False)


def _user_file_kept(name: str) -> Callable[[Path], str | None]:
    def check(tmp: Path) -> str | None:
        path = tmp / "run" / name if name else tmp / "run"
        if not path.is_file() or path.read_text(encoding="utf-8") != "precious\n":
            return f"{path} was changed or removed"
        return None

    return check


def _out_onto_run(tmp: Path) -> list[str]:
    real_run(tmp)
    return base_args(tmp, dry_run=False)


def _cache_dir_file(tmp: Path) -> list[str]:
    (tmp / "cachefile").write_text("not a folder\n", encoding="utf-8")
    return base_args(tmp, dry_run=False) + ["--cache-dir", str(tmp / "cachefile")]


def _cache_dir_below_file(tmp: Path) -> list[str]:
    (tmp / "cachefile").write_text("not a folder\n", encoding="utf-8")
    return base_args(tmp, dry_run=False) + ["--cache-dir", str(tmp / "cachefile" / "medpool")]


def _cache_env_onto_a_file(tmp: Path) -> list[str]:
    """$MEDPOOL_CACHE_DIR naming a file (run_case restores the variable afterwards)."""
    (tmp / "cachefile").write_text("not a folder\n", encoding="utf-8")
    os.environ["MEDPOOL_CACHE_DIR"] = str(tmp / "cachefile")
    return base_args(tmp, dry_run=False)


def _subset_file(content: bytes, filename: str = "subset.yaml") -> Callable[[Path], list[str]]:
    def setup(tmp: Path) -> list[str]:
        path = tmp / filename
        path.write_bytes(content)
        return base_args(tmp) + ["--subset", str(path)]

    return setup


def _pool_flag_empty(tmp: Path) -> list[str]:
    write_pool(tmp, pool_text(), name="model_pool.yaml")  # what an empty --pool falls back to, in the cwd
    argv = base_args(tmp)
    argv[argv.index("--pool") + 1] = ""
    return argv


def _rescore_without_store(tmp: Path) -> list[str]:
    return ["--rescore", str(_mkdir(tmp / "not-a-run"))]


def _rescore_with_data(tmp: Path) -> list[str]:
    run_dir = real_run(tmp)
    other = write_items(tmp / "other.jsonl", [item("z1")])
    return ["--rescore", str(run_dir), "--data", str(other)]


def _rescore_with_limit(tmp: Path) -> list[str]:
    return ["--rescore", str(real_run(tmp)), "--limit", "1"]


CLI_CASES: list[Case] = [
    _cli_case("unknown_flag", "--bogus", "--bogus"),
    _cli_case("sample_negative", "--sample", "--sample", "-1"),
    _cli_case("sample_zero", "--sample", "--sample", "0"),
    _cli_case("sample_not_an_integer", "--sample", "--sample", "ten"),
    _cli_case("sample_float", "--sample", "--sample", "2.5"),
    _cli_case("limit_negative", "--limit", "--limit", "-3"),
    _cli_case("limit_not_an_integer", "--limit", "--limit", "1e3"),
    _cli_case("limit_without_value", "--limit", "--limit"),
    _cli_case("max_consecutive_failures_negative", "--max-consecutive-failures", "--max-consecutive-failures", "-1"),
    _cli_case(
        "max_consecutive_failures_not_an_integer", "--max-consecutive-failures", "--max-consecutive-failures", "five"
    ),
    _cli_case("log_interval_negative", "--log-interval", "--log-interval", "-5"),
    _cli_case("log_interval_nan", "--log-interval", "--log-interval", "nan"),
    _cli_case("models_unknown", "ghost", "--models", "alpha,ghost"),
    _cli_case("models_only_commas", "--models", "--models", ","),
    Case("cli", "pool_flag_empty_string", _pool_flag_empty, "--pool"),
    _cli_case("subset_unknown_name", "--subset", "--subset", "huge"),
    Case("cli", "subset_file_missing", lambda tmp: base_args(tmp) + ["--subset", str(tmp / "hard.yaml")], "hard.yaml"),
    Case("cli", "subset_file_malformed_yaml", _subset_file(b"item_ids: [unclosed\n"), "subset.yaml"),
    Case("cli", "subset_file_wrong_shape", _subset_file(b"item_ids: {a: 1}\n"), "subset.yaml"),
    Case("cli", "subset_file_unknown_id", _subset_file(b"item_ids: [nowhere/x/1]\n"), "subset.yaml"),
    Case("cli", "subset_file_empty_list", _subset_file(b"item_ids: []\n"), "subset.yaml"),
    Case("cli", "subset_text_file_empty", _subset_file(b"", "ids.txt"), "ids.txt"),
    Case("cli", "subset_file_non_utf8", _subset_file(b"caf\xe9/x/1\n", "ids.txt"), "ids.txt"),
    Case("cli", "out_onto_existing_file", _out_onto_file, "--out", _user_file_kept("")),
    Case("cli", "out_onto_folder_of_user_files", _out_onto_user_folder, "--out", _user_file_kept("thesis.docx")),
    Case("cli", "out_onto_existing_run", _out_onto_run, "--out"),
    Case(
        "cli",
        "out_below_a_file",
        _out_below_a_file,
        "afile",
        lambda tmp: None if (tmp / "afile").read_text(encoding="utf-8") == "precious\n" else "afile was changed",
    ),
    Case(
        "cli",
        "ray_address_not_host_port",
        lambda tmp: base_args(tmp, dry_run=False) + ["--executor", "ray", "--ray-address", "head-without-port"],
        "--ray-address",
    ),
    Case("cli", "cache_dir_onto_a_file", _cache_dir_file, "--cache-dir"),
    Case("cli", "cache_dir_below_a_file", _cache_dir_below_file, "cachefile"),
    Case("cli", "cache_env_var_onto_a_file", _cache_env_onto_a_file, "MEDPOOL_CACHE_DIR"),
    _resume_with("resume_with_rescore", "--rescore", "--rescore", "{tmp}/run"),
    _resume_with("resume_with_hallu", "--hallu", "--hallu"),
    _resume_with("resume_with_no_judge", "--no-judge", "--no-judge"),
    _resume_with("resume_with_other_models", "--models", "--models", "alpha,beta"),
    _resume_with("resume_with_other_limit", "--limit", "--limit", "3"),
    _resume_with("resume_with_all", "--all", "--all"),
    _resume_with("resume_with_data", "--data", "--data", "{tmp}/items.jsonl"),
    _resume_with("resume_with_pool", "--pool", "--pool", "{tmp}/pool.yaml"),
    _resume_with("resume_with_out", "--out", "--out", "{tmp}/elsewhere"),
    Case("cli", "resume_folder_without_store", lambda tmp: ["--resume", str(_mkdir(tmp / "empty-run"))], "run.sqlite"),
    Case("cli", "resume_missing_folder", lambda tmp: ["--resume", str(tmp / "no-such-run")], "no-such-run"),
    Case("cli", "rescore_folder_without_store", _rescore_without_store, "run.sqlite"),
    Case("cli", "rescore_with_data", _rescore_with_data, "--data"),
    Case("cli", "rescore_with_limit", _rescore_with_limit, "--limit"),
]


# ---- run folders ---------------------------------------------------------------------------------


def _resume_store(write: Callable[[Path], None], *, run_first: bool = False) -> Callable[[Path], list[str]]:
    """--resume on a folder whose run.sqlite ``write`` produced (over a real run's, if run_first)."""

    def setup(tmp: Path) -> list[str]:
        run_dir = real_run(tmp) if run_first else _mkdir(tmp / "run")
        write(run_dir / "run.sqlite")
        return ["--resume", str(run_dir)]

    return setup


def _random_bytes(path: Path) -> None:
    path.write_bytes(bytes((i * 7919 + 13) % 256 for i in range(8192)))


def _zero_bytes(path: Path) -> None:
    path.write_bytes(b"")


def _foreign_app_db(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE contacts (name TEXT, phone TEXT)")
        conn.execute("INSERT INTO contacts VALUES ('Ada', '555-0100')")


def _foreign_db_untouched(tmp: Path) -> str | None:
    with contextlib.closing(sqlite3.connect(tmp / "run" / "run.sqlite")) as conn:
        tables = sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    if tables != ["contacts"] or mode != "delete":
        return f"the other application's database was changed: tables now {tables}, journal_mode {mode}"
    return None


def _same_named_table_other_shape(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, title TEXT)")
        conn.execute("INSERT INTO runs (title) VALUES ('marathon')")


def _future_schema(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA user_version = 99")


def _sql(statement: str) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with contextlib.closing(sqlite3.connect(path)) as conn, conn:
            conn.execute(statement)

    return write


def _two_runs(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "INSERT INTO runs SELECT 'second', created_at, updated_at, pool_fingerprint, data_fingerprint,"
            " options_json, status, resumes FROM runs"
        )


def _truncated(path: Path) -> None:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)


def _resume_a_file(tmp: Path) -> list[str]:
    (tmp / "run").write_text("not a folder\n", encoding="utf-8")
    return ["--resume", str(tmp / "run")]


def _store_is_a_folder(tmp: Path) -> list[str]:
    _mkdir(tmp / "run" / "run.sqlite")
    return ["--resume", str(tmp / "run")]


def _pool_edited_since(tmp: Path) -> list[str]:
    run_dir = real_run(tmp)
    pool = tmp / "pool.yaml"
    pool.write_text(pool.read_text(encoding="utf-8").replace("max_tokens: 16", "max_tokens: 17"), encoding="utf-8")
    return ["--resume", str(run_dir)]


def _pool_deleted_since(tmp: Path) -> list[str]:
    run_dir = real_run(tmp)
    (tmp / "pool.yaml").unlink()
    return ["--resume", str(run_dir)]


def _data_broken_since(tmp: Path) -> list[str]:
    run_dir = real_run(tmp)
    (tmp / "items.jsonl").write_text('{"id": \n', encoding="utf-8")
    return ["--resume", str(run_dir)]


RUN_FOLDER_CASES: list[Case] = [
    Case("run_folder", "store_of_random_bytes", _resume_store(_random_bytes), "run.sqlite"),
    Case("run_folder", "store_of_zero_bytes", _resume_store(_zero_bytes), "run.sqlite"),
    Case(
        "run_folder",
        "store_of_another_application",
        _resume_store(_foreign_app_db),
        "run.sqlite",
        after=_foreign_db_untouched,
    ),
    Case(
        "run_folder",
        "store_with_same_named_table_of_other_shape",
        _resume_store(_same_named_table_other_shape),
        "run.sqlite",
    ),
    Case("run_folder", "store_of_a_future_schema", _resume_store(_future_schema), "run.sqlite"),
    Case("run_folder", "store_with_two_runs", _resume_store(_two_runs, run_first=True), "run.sqlite"),
    Case("run_folder", "store_with_no_run", _resume_store(_sql("DELETE FROM runs"), run_first=True), "run.sqlite"),
    Case("run_folder", "store_truncated", _resume_store(_truncated, run_first=True), "run.sqlite"),
    Case(
        "run_folder",
        "store_options_not_json",
        _resume_store(_sql("UPDATE runs SET options_json = '{not json'"), run_first=True),
        "run.sqlite",
    ),
    Case(
        "run_folder",
        "store_options_a_number",
        _resume_store(_sql("UPDATE runs SET options_json = '42'"), run_first=True),
        "run.sqlite",
    ),
    Case(
        "run_folder",
        "store_options_limit_is_text",
        _resume_store(_sql("UPDATE runs SET options_json = json_set(options_json, '$.limit', 'two')"), run_first=True),
        "limit",
    ),
    Case(
        "run_folder",
        "store_options_pool_missing",
        _resume_store(_sql("UPDATE runs SET options_json = json_remove(options_json, '$.pool')"), run_first=True),
        "pool",
    ),
    Case("run_folder", "resume_folder_is_a_file", _resume_a_file, "run: "),
    Case("run_folder", "store_is_a_folder", _store_is_a_folder, "run.sqlite"),
    Case("run_folder", "pool_edited_since_the_run", _pool_edited_since, "pool"),
    Case("run_folder", "pool_deleted_since_the_run", _pool_deleted_since, "pool.yaml"),
    Case("run_folder", "data_broken_since_the_run", _data_broken_since, "items.jsonl:1"),
]

CASES: list[Case] = POOL_CASES + PREFLIGHT_CASES + DATA_CASES + CLI_CASES + RUN_FOLDER_CASES


# ---- running a case ------------------------------------------------------------------------------


@contextlib.contextmanager
def _captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    """stdout and stderr into buffers; log records into the stderr buffer; handlers restored."""
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    handlers_before = list(root.handlers)
    handler = logging.StreamHandler(err)
    root.addHandler(handler)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            yield out, err
    finally:
        for added in [h for h in root.handlers if h not in handlers_before]:
            root.removeHandler(added)  # also any handler pool.run's basicConfig bound to our buffer


@contextlib.contextmanager
def _sandbox(tmp_path: Path) -> Iterator[None]:
    """cwd = tmp_path, cache under tmp_path, the planted key in the environment, one key variable
    unset and one empty; all restored."""
    saved_env = {name: os.environ.get(name) for name in ("MEDPOOL_CACHE_DIR", SECRET_ENV, UNSET_ENV, EMPTY_ENV)}
    saved_cwd = os.getcwd()
    os.environ["MEDPOOL_CACHE_DIR"] = str(tmp_path / "cache")
    os.environ[SECRET_ENV] = SECRET
    os.environ.pop(UNSET_ENV, None)
    os.environ[EMPTY_ENV] = ""
    os.chdir(tmp_path)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def run_case(case: Case, tmp_path: Path) -> dict[str, Any]:
    """Set the case up, call ``pool.run.main(argv)`` in-process and describe what happened."""
    from pool.run import main

    tmp_path = Path(tmp_path).resolve()
    with _sandbox(tmp_path):
        argv = case.setup(tmp_path)
        exception = None
        with _captured() as (out, err):
            try:
                code: Any = main(argv)
            except SystemExit as exc:  # argparse
                code = exc.code
            except Exception:  # noqa: BLE001 - an escaped exception is the finding
                exception = traceback.format_exc()
                code = None
        after = case.after(tmp_path) if case.after else None
    stdout, stderr = out.getvalue(), err.getvalue()
    if exception:
        stderr += exception
    output = stdout + stderr
    return {
        "id": case.id,
        "group": case.group,
        "name": case.name,
        "argv": argv,
        "exit_code": code,
        "traceback": TRACEBACK_MARK in stderr,
        "exception": exception,
        "names_culprit": case.expect_in_message in output,
        "expect_in_message": case.expect_in_message,
        "secret_leaked": SECRET in output,
        "side_effect": after,
        "stdout": stdout,
        "stderr": stderr,
    }


def problems(result: dict[str, Any]) -> list[str]:
    """What in a result breaks the contract for bad input (empty when the case passes)."""
    found = []
    if result["exit_code"] != 2:
        found.append(f"exit code {result['exit_code']!r}, expected 2")
    if result["traceback"]:
        found.append("a Python traceback")
    if not result["names_culprit"]:
        found.append(f"message does not contain {result['expect_in_message']!r}")
    if result["secret_leaked"]:
        found.append(f"the planted secret {SECRET} was printed")
    if result["side_effect"]:
        found.append(result["side_effect"])
    return found


SUMMARY_COLUMNS = (
    "cases",
    "exit 2",
    "tracebacks",
    "silently accepted (exit 0)",
    "other exit",
    "message names culprit",
    "secret printed",
    "side effects",
)


def summary(results: Sequence[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Per group (and in total): how many cases, and how many of each outcome."""
    table: dict[str, dict[str, int]] = {}
    for group in [*GROUPS, "total"]:
        rows = [r for r in results if group == "total" or r["group"] == group]
        table[group] = {
            "cases": len(rows),
            "exit 2": sum(r["exit_code"] == 2 for r in rows),
            "tracebacks": sum(r["traceback"] for r in rows),
            "silently accepted (exit 0)": sum(r["exit_code"] == 0 for r in rows),
            "other exit": sum(r["exit_code"] not in (0, 2) for r in rows),
            "message names culprit": sum(r["names_culprit"] for r in rows),
            "secret printed": sum(r["secret_leaked"] for r in rows),
            "side effects": sum(bool(r["side_effect"]) for r in rows),
        }
    return table


def format_summary(table: dict[str, dict[str, int]]) -> str:
    """The summary as a Markdown table."""
    lines = ["| group | " + " | ".join(SUMMARY_COLUMNS) + " |", "|---" * (len(SUMMARY_COLUMNS) + 1) + "|"]
    for group, counts in table.items():
        lines.append(f"| {group} | " + " | ".join(str(counts[c]) for c in SUMMARY_COLUMNS) + " |")
    return "\n".join(lines)


def _main() -> int:
    import tempfile

    results = []
    with tempfile.TemporaryDirectory(prefix="medpool-malformed-") as root:
        for index, case in enumerate(CASES):
            tmp = Path(root) / f"{index:03d}"
            tmp.mkdir()
            results.append(run_case(case, tmp))
    print(format_summary(summary(results)))
    for result in results:
        found = problems(result)
        if found:
            last = (result["stderr"].strip().splitlines() or [""])[-1]
            print(f"\n{result['id']}: {'; '.join(found)}\n    last stderr line: {last[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(_main())
