"""Every malformed input in ``bench/harness/malformed_cases.py`` ends as the README promises for bad input:
exit 2, no traceback, a message naming the file/flag/field, and no planted secret printed.

Cases the product still mis-handles stay in the table as strict xfails, each with the exact
behaviour, so fixing one turns its xfail into a failure that asks for the mark to be removed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.harness.malformed_cases import CASES, GROUPS, SECRET, Case, run_case, summary

# case id -> what the product does today (the mark comes off when the product is fixed)
KNOWN_BUGS: dict[str, str] = {}  # case id -> the exact wrong behaviour (none known today)


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
        return {
            "group": group,
            "exit_code": code,
            "traceback": flags.get("tb", False),
            "names_culprit": flags.get("named", False),
            "secret_leaked": False,
            "side_effect": None,
        }

    table = summary([row("pool", 2, named=True), row("pool", 0), row("data", None, tb=True), row("cli", 1)])
    assert table["pool"] == {
        "cases": 2,
        "exit 2": 1,
        "tracebacks": 0,
        "silently accepted (exit 0)": 1,
        "other exit": 0,
        "message names culprit": 1,
        "secret printed": 0,
        "side effects": 0,
    }
    assert table["data"]["tracebacks"] == 1 and table["data"]["other exit"] == 1
    assert table["run_folder"]["cases"] == 0 and table["total"]["cases"] == 4
