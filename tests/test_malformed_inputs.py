"""Every malformed input in ``tests/malformed_cases.py`` ends as the README promises for bad input:
exit 2, no traceback, a message naming the file/flag/field, and no planted secret printed.

Cases the product still mis-handles stay in the table as strict xfails, each with the exact
behaviour, so fixing one turns its xfail into a failure that asks for the mark to be removed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.malformed_cases import CASES, GROUPS, SECRET, Case, run_case, summary

# case id -> what the product does today (the mark comes off when the product is fixed)
KNOWN_BUGS: dict[str, str] = {
    "pool/base_url_holding_a_pasted_key": (
        "a key pasted as base_url is echoed: pool/config_values.py check_base_url quotes the value "
        "(_shown_url) in 'base_url 'sk-live-...' must start with http:// or https://'"
    ),
    "cli/log_interval_negative": "--log-interval is type=float with no range check (pool/run.py:88); -5 is accepted, exit 0",
    "cli/log_interval_nan": "--log-interval nan is accepted (pool/run.py:88), exit 0; progress lines would never be printed",
    "cli/pool_flag_empty_string": (
        "--pool '' silently falls back to ./model_pool.yaml (pool/run.py:170 `args.pool or DEFAULT_POOL`), exit 0"
    ),
    "cli/subset_file_empty_list": (
        "--subset FILE with `item_ids: []` selects 0 items and the run goes ahead with 0 units "
        "(pool/items_source.py:_apply_subset/select_items never checks for an empty result), exit 0"
    ),
    "cli/subset_text_file_empty": "an empty --subset ids.txt selects 0 items; the run goes ahead with 0 units, exit 0",
    "cli/subset_file_non_utf8": (
        "a non-UTF-8 --subset file gives exit 2 but the message is only Python's codec error "
        "(\"'utf-8' codec can't decode byte 0xe9 ...\"), naming neither --subset nor the file "
        "(pool/items_source.py:123 read_text raises UnicodeDecodeError, caught as ValueError in pool/run.py:283)"
    ),
    "cli/cache_dir_below_a_file": (
        "--cache-dir FILE/sub passes _check_cache_dir (pool/run.py:185 only tests the path itself); the run folder "
        "is created and begun, then ResponseCache fails: 'error: NotADirectoryError: ...', exit 1"
    ),
    "cli/cache_env_var_onto_a_file": (
        "$MEDPOOL_CACHE_DIR naming a file is never checked (_check_cache_dir returns early without --cache-dir); "
        "the run is created and begun, then 'error: FileExistsError: ...', exit 1"
    ),
    "cli/rescore_with_data": (
        "--rescore silently ignores --data (pool/run.py:162-168 keeps only --pool/--no-judge/--hallu/--no-routing); "
        "the run is rescored with its own data, exit 1 (the stored run's infra errors)"
    ),
    "cli/rescore_with_limit": "--rescore silently ignores --limit (pool/run.py:162-168); exit 1 from the stored run",
    "run_folder/store_of_another_application": (
        "exit 2 with a good message, but RunStore(run_dir) in _stored_options (pool/run.py:120) first writes "
        "medpool's tables into the other application's database and switches it to WAL mode"
    ),
    "run_folder/store_with_same_named_table_of_other_shape": (
        "a run.sqlite whose `runs` table has other columns: CREATE TABLE IF NOT EXISTS keeps it, then "
        "pool/store.py:277 runs() raises sqlite3.OperationalError 'no such column: created_at', uncaught: traceback"
    ),
    "run_folder/store_options_not_json": (
        "runs.options_json not JSON: exit 2 but the message is json's 'Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1)', naming neither run.sqlite nor the field (pool/store.py:196)"
    ),
    "run_folder/store_options_a_number": (
        "runs.options_json = '42': pool/run.py:124 dict(runs[0].options) raises TypeError, uncaught: traceback"
    ),
    "run_folder/store_options_limit_is_text": (
        "stored option limit = 'two': pool/items_source.py:93 `options['limit'] < 1` raises TypeError: traceback"
    ),
    "run_folder/store_options_pool_missing": (
        "stored options without `pool`: pool/run.py:161 fills None, load_pool(None) raises TypeError "
        "in Path(None): traceback"
    ),
}


def _param(case: Case) -> object:
    marks = []
    if case.id in KNOWN_BUGS:
        marks.append(pytest.mark.xfail(strict=True, raises=AssertionError, reason=KNOWN_BUGS[case.id]))
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_malformed_input_is_rejected_cleanly(case: Case, tmp_path: Path) -> None:
    result = run_case(case, tmp_path)
    output = result["stdout"] + result["stderr"]
    assert not result["traceback"], f"traceback:\n{result['stderr'][-3000:]}"
    assert result["exit_code"] == 2, f"exit {result['exit_code']!r}, expected 2\n{output[-2000:]}"
    assert result["names_culprit"], f"{case.expect_in_message!r} not in the message:\n{output[-2000:]}"
    assert not result["secret_leaked"], f"{SECRET} printed:\n{output[-2000:]}"
    assert not result["side_effect"], result["side_effect"]


def test_the_table_covers_every_group() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    assert len(CASES) >= 70
    counts = {g: sum(c.group == g for c in CASES) for g in GROUPS}
    assert all(n >= 5 for n in counts.values()), counts
    assert set(KNOWN_BUGS) <= set(ids), "a known bug names a case that is not in the table"


def test_summary_counts_outcomes_per_group() -> None:
    def row(group: str, code: object, **flags: bool) -> dict[str, object]:
        return {"group": group, "exit_code": code, "traceback": flags.get("tb", False),
                "names_culprit": flags.get("named", False), "secret_leaked": False, "side_effect": None}

    table = summary([row("pool", 2, named=True), row("pool", 0), row("data", None, tb=True), row("cli", 1)])
    assert table["pool"] == {"cases": 2, "exit 2": 1, "tracebacks": 0, "silently accepted (exit 0)": 1,
                             "other exit": 0, "message names culprit": 1, "secret printed": 0, "side effects": 0}
    assert table["data"]["tracebacks"] == 1 and table["data"]["other exit"] == 1
    assert table["run_folder"]["cases"] == 0 and table["total"]["cases"] == 4
