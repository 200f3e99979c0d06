"""Execution-checked SQL: schema prose, SQL extraction, Oracle -> SQLite, synthetic data, comparison,
and the 30 real MedDBOps references (../shared/data)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval.objective.sql import check as sql_check
from eval.objective.sql.check import SqlCheck, check_sql
from eval.objective.sql.compare import normalise
from eval.objective.sql.data import build_database, literal_hints
from eval.objective.sql.dates import add_months, days_between, months_between, to_char
from eval.objective.sql.dialect import parse_oracle, to_sqlite
from eval.objective.sql.extract import find_sql_blocks, split_statements
from eval.objective.sql.functions import register_oracle_functions
from eval.objective.sql.schema import SchemaError, parse_schema_text, schema_for_question

DBOPS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "medbench-agent-95" / "MedDBOps.jsonl"

QUESTION = """查询2024年在'心内科'就诊的患者姓名和就诊日期，按就诊日期升序排列。
数据结构说明
1. 患者表 (PATIENT)
字段名：patient_id (数据类型：VARCHAR2(20))：患者唯一标识（主键）
字段名：name (数据类型：VARCHAR2(50))：患者姓名
字段名：age (数据类型：NUMBER(3))：年龄
2. 门诊就诊表（OUTPATIENT_VISIT）
字段名：visit_id（数据类型：VARCHAR2(20)）：就诊唯一标识（主键）
字段名：patient_id（数据类型：VARCHAR2(20)）：关联患者表的外键
字段名：dept（数据类型：VARCHAR2(30)）：就诊科室，如'心内科'、'呼吸科'
字段名：visit_date（数据类型：DATE）：就诊日期
字段名：fee（数据类型：NUMBER(8, 2)）：费用
"""
REFERENCE = """下面是查询：

```sql
SELECT p.name AS 姓名, v.visit_date AS 就诊日期
  FROM PATIENT p
  JOIN OUTPATIENT_VISIT v ON p.patient_id = v.patient_id
 WHERE v.dept = '心内科'
   AND v.visit_date >= TO_DATE('2024-01-01', 'YYYY-MM-DD')
   AND v.visit_date < DATE '2025-01-01'
 ORDER BY v.visit_date;
```

| 姓名 | 就诊日期 |
|---|---|
"""


def fenced(sql: str) -> str:
    return f"答案如下：\n```sql\n{sql}\n```\n"


def check(model_sql: str, reference: str = REFERENCE, **kwargs) -> SqlCheck:
    return check_sql(QUESTION, reference, fenced(model_sql), **kwargs)


# --- the comparison, on a hand-written schema -----------------------------------------------------


def test_the_reference_is_informative_and_matches_itself() -> None:
    result = check_sql(QUESTION, REFERENCE, REFERENCE)
    assert result.outcome == "match" and result.passed is True
    assert result.details["reference_informative"] and result.details["reference_rows"] > 0
    assert result.details["ordered"] and result.details["dialect"] == "oracle->sqlite"


def test_a_different_but_equivalent_query_matches() -> None:
    result = check("""SELECT pat.name, vis.visit_date FROM OUTPATIENT_VISIT vis
                      INNER JOIN PATIENT pat ON vis.patient_id = pat.patient_id
                      WHERE vis.dept IN ('心内科') AND EXTRACT(YEAR FROM vis.visit_date) = 2024
                      ORDER BY vis.visit_date ASC""")
    assert result.outcome == "match", result.details


JOINED = "SELECT p.name, v.visit_date FROM PATIENT p JOIN OUTPATIENT_VISIT v ON p.patient_id = v.patient_id "


@pytest.mark.parametrize(
    "wrong",
    [
        JOINED + "WHERE v.dept = '呼吸科' AND v.visit_date >= DATE '2024-01-01' ORDER BY v.visit_date",
        JOINED + "WHERE v.dept = '心内科' ORDER BY v.visit_date",  # every year
        JOINED
        + (
            "WHERE v.dept = '心内科' AND v.visit_date > DATE '2024-01-01' "
            "AND v.visit_date < DATE '2025-01-01' ORDER BY 2"
        ),
    ],
)
def test_wrong_queries_mismatch(wrong: str) -> None:
    result = check(wrong)
    assert result.outcome == "mismatch" and result.passed is False, result.details


def test_the_planted_boundary_date_separates_greater_from_greater_or_equal() -> None:
    """The reference's '>= 2024-01-01' literal is planted, so '>' (third wrong query above) loses rows."""
    result = check(
        "SELECT p.name, v.visit_date FROM PATIENT p JOIN OUTPATIENT_VISIT v ON p.patient_id = v.patient_id "
        "WHERE v.dept = '心内科' AND v.visit_date > DATE '2024-01-01' AND v.visit_date < DATE '2025-01-01'"
    )
    assert result.details["model_rows"] < result.details["reference_rows"]


def test_reordered_columns_match_and_say_how() -> None:
    result = check(
        "SELECT v.visit_date, p.name FROM PATIENT p JOIN OUTPATIENT_VISIT v ON p.patient_id = v.patient_id "
        "WHERE v.dept = '心内科' AND v.visit_date BETWEEN DATE '2024-01-01' AND DATE '2024-12-31' ORDER BY 1"
    )
    assert result.outcome == "match" and result.details["column_order"] == [1, 0]


def test_order_matters_when_the_reference_orders() -> None:
    result = check(
        "SELECT p.name, v.visit_date FROM PATIENT p JOIN OUTPATIENT_VISIT v ON p.patient_id = v.patient_id "
        "WHERE v.dept = '心内科' AND v.visit_date >= DATE '2024-01-01' AND v.visit_date < DATE '2025-01-01' "
        "ORDER BY v.visit_date DESC"
    )
    assert result.outcome == "mismatch" and result.details["reason"] == "different values"


def test_rows_are_a_multiset_when_the_reference_does_not_order() -> None:
    reference = fenced("SELECT dept, COUNT(*) FROM OUTPATIENT_VISIT GROUP BY dept")
    result = check("SELECT COUNT(*) AS n, dept FROM OUTPATIENT_VISIT GROUP BY dept ORDER BY n DESC", reference)
    assert result.outcome == "match" and not result.details["ordered"]
    duplicated = check(
        "SELECT dept, COUNT(*) FROM OUTPATIENT_VISIT GROUP BY dept UNION ALL "
        "SELECT dept, COUNT(*) FROM OUTPATIENT_VISIT GROUP BY dept",
        reference,
    )
    assert duplicated.outcome == "mismatch"  # multiset, not set: duplicates count


def test_rows_with_equal_sort_keys_may_come_in_any_order() -> None:
    reference = fenced("SELECT visit_id, dept FROM OUTPATIENT_VISIT ORDER BY dept")
    result = check("SELECT visit_id, dept FROM OUTPATIENT_VISIT ORDER BY dept, visit_id DESC", reference)
    assert result.outcome == "match" and result.details["order_ties"]
    assert check("SELECT visit_id, dept FROM OUTPATIENT_VISIT ORDER BY dept DESC", reference).outcome == "mismatch"


def test_oracle_functions_are_transpiled_and_run() -> None:
    """NVL, TO_DATE, ROWNUM, DECODE, TO_CHAR with a mask, ADD_MONTHS and date arithmetic all run, and
    Oracle's ROWNUM top-n equals the standard FETCH FIRST."""
    reference = fenced(
        "SELECT * FROM (SELECT name, NVL(age, -1) AS age FROM PATIENT ORDER BY age DESC, patient_id) WHERE ROWNUM <= 5"
    )
    model = "SELECT name, COALESCE(age, -1) FROM PATIENT ORDER BY 2 DESC, patient_id FETCH FIRST 5 ROWS ONLY"
    assert check(model, reference).outcome == "match"
    oracle = fenced(
        "SELECT visit_id, DECODE(dept, '心内科', 1, 0), TO_CHAR(visit_date, 'YYYY/MM'), "
        "ADD_MONTHS(visit_date, 1), visit_date + 7, SYSDATE - visit_date FROM OUTPATIENT_VISIT "
        "WHERE visit_date >= TO_DATE('2024-01-01', 'YYYY-MM-DD')"
    )
    assert check_sql(QUESTION, oracle, oracle).outcome == "match"
    standard = (
        "SELECT visit_id, CASE WHEN dept = '心内科' THEN 1 ELSE 0 END, TO_CHAR(visit_date, 'YYYY/MM'), "
        "ADD_MONTHS(visit_date, 1), visit_date + INTERVAL '7' DAY, SYSDATE - visit_date FROM OUTPATIENT_VISIT "
        "WHERE visit_date >= DATE '2024-01-01'"
    )
    assert check(standard, oracle).outcome == "match"


def test_nvl_matters_because_some_values_are_null() -> None:
    reference = fenced("SELECT visit_id, NVL(fee, 0) FROM OUTPATIENT_VISIT")
    assert check("SELECT visit_id, COALESCE(fee, 0) FROM OUTPATIENT_VISIT", reference).outcome == "match"
    assert check("SELECT visit_id, fee FROM OUTPATIENT_VISIT", reference).outcome == "mismatch"


def test_an_empty_reference_result_is_retried_then_flagged() -> None:
    reference = fenced("SELECT name FROM PATIENT WHERE age > 5 AND age < 3")  # no data can satisfy it
    result = check("SELECT name FROM PATIENT WHERE 1 = 0", reference)
    assert result.outcome == "match" and result.details["data_attempts"] == sql_check.DATA_ATTEMPTS
    assert result.details["reference_informative"] is False
    assert check_sql(QUESTION, REFERENCE, REFERENCE).details["data_attempts"] == 1


def test_invalid_model_sql_is_reported_with_the_error() -> None:
    result = check("SELECT name FROM NO_SUCH_TABLE")
    assert result.outcome == "model_sql_invalid" and result.passed is False
    assert "no such table" in result.details["model_errors"][0]
    assert check("SELEC name FRM PATIENT WHERE").outcome == "model_sql_invalid"


def test_a_broken_first_block_gives_way_to_one_that_runs() -> None:
    answer = fenced("SELECT name FROM NO_SUCH_TABLE") + fenced(
        "SELECT p.name, v.visit_date FROM PATIENT p JOIN OUTPATIENT_VISIT v ON p.patient_id = v.patient_id "
        "WHERE v.dept = '心内科' AND v.visit_date >= DATE '2024-01-01' AND v.visit_date < DATE '2025-01-01' ORDER BY 2"
    )
    result = check_sql(QUESTION, REFERENCE, answer)
    assert result.outcome == "match" and result.details["model_block"] == 1 and result.details["model_errors"]


def test_the_first_block_that_runs_is_final() -> None:
    wrong_then_right = fenced("SELECT name, age FROM PATIENT") + REFERENCE
    assert check_sql(QUESTION, REFERENCE, wrong_then_right).outcome == "mismatch"


@pytest.mark.parametrize("answer", ["我无法回答这个问题。", "```python\nprint('SELECT 1')\n```", ""])
def test_no_sql_found(answer: str) -> None:
    result = check_sql(QUESTION, REFERENCE, answer)
    assert result.outcome == "no_sql_found" and result.passed is False


def test_plsql_is_not_executed() -> None:
    answer = "```sql\nBEGIN\n  UPDATE PATIENT SET age = 1;\nEND;\n/\nSELECT name FROM PATIENT;\n```"
    result = check_sql(QUESTION, REFERENCE, answer)
    assert result.outcome == "model_sql_invalid" and "PL/SQL" in result.details["model_errors"][0]


def test_a_reference_that_cannot_run_cannot_judge() -> None:
    result = check_sql(QUESTION, fenced("SELECT x FROM NOWHERE"), fenced("SELECT 1 FROM DUAL"))
    assert result.outcome == "reference_not_executable" and result.passed is None
    assert "no such table" in result.details["reason"]
    no_schema = check_sql("统计患者人数。", fenced("SELECT COUNT(*) FROM PATIENT"), fenced("SELECT 1 FROM DUAL"))
    assert no_schema.outcome == "reference_not_executable" and "no table schema" in no_schema.details["reason"]


def test_data_changes_compare_the_tables_afterwards() -> None:
    reference = fenced("UPDATE OUTPATIENT_VISIT SET fee = fee * 0.9 WHERE dept = '心内科';\nCOMMIT;")
    same = check("UPDATE OUTPATIENT_VISIT v SET v.fee = 0.9 * v.fee WHERE v.dept IN ('心内科')", reference)
    assert (
        same.outcome == "match" and same.details["reference_rows_changed"] > 0 and same.details["reference_informative"]
    )
    other = check("UPDATE OUTPATIENT_VISIT SET fee = fee * 0.9 WHERE dept = '呼吸科'", reference)
    assert other.outcome == "mismatch" and other.details["tables_differing"] == ["OUTPATIENT_VISIT"]
    query = check("SELECT fee * 0.9 FROM OUTPATIENT_VISIT WHERE dept = '心内科'", reference)
    assert query.outcome == "mismatch" and "changes data" in query.details["reason"]


def test_time_limit_and_row_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sql_check, "TIME_LIMIT_S", 0.2)
    cross = check("SELECT COUNT(*) FROM OUTPATIENT_VISIT a, OUTPATIENT_VISIT b, OUTPATIENT_VISIT c, OUTPATIENT_VISIT d")
    assert cross.outcome == "model_sql_invalid" and "time limit" in cross.details["model_errors"][0]
    monkeypatch.setattr(sql_check, "ROW_CAP", 50)
    many = check("SELECT a.visit_id FROM OUTPATIENT_VISIT a, PATIENT b")
    assert many.outcome == "model_sql_invalid" and "more than 50 rows" in many.details["model_errors"][0]


# --- fixtures, determinism ----------------------------------------------------------------------


def test_fixture_rows_are_used_as_given() -> None:
    fixture = {
        "tables": {
            "LAB": {
                "columns": {"id": "NUMBER", "value": "NUMBER(5, 1)", "unit": "VARCHAR2(10)"},
                "primary_key": "id",
                "rows": [[1, 2.5, "g/L"], {"id": 2, "unit": "g/L"}, [3, 4.0, None]],
            }
        }
    }
    reference = fenced("SELECT SUM(NVL(value, 0)), COUNT(unit) FROM LAB")
    assert (
        check_sql("", reference, fenced("SELECT SUM(value), COUNT(unit) FROM LAB"), fixture=fixture).outcome == "match"
    )
    result = check_sql("", reference, fenced("SELECT SUM(value), COUNT(*) FROM LAB"), fixture=fixture)
    assert result.outcome == "mismatch" and result.details["tables"] == {"LAB": 3}


def test_ddl_fixture_is_synthesised() -> None:
    ddl = "CREATE TABLE WARD (ward_id VARCHAR2(10) PRIMARY KEY, beds NUMBER(3), opened DATE);"
    reference, model = (
        fenced("SELECT COUNT(*) FROM WARD WHERE beds > 50"),
        fenced("SELECT COUNT(1) FROM WARD WHERE 50 < beds"),
    )
    result = check_sql("", reference, model, fixture=ddl)
    assert result.outcome == "match" and 60 <= result.details["tables"]["WARD"] <= 120


def test_the_database_is_deterministic_and_the_seed_changes_it() -> None:
    schema = schema_for_question(QUESTION)
    hints = literal_hints([parse_oracle(find_sql_blocks(REFERENCE)[0].statements[0].text)])
    first = build_database(schema, hints, QUESTION, seed=0)
    assert build_database(schema, hints, QUESTION, seed=0) == first
    assert build_database(schema, hints, QUESTION, seed=1).image != first.image
    sql_check._prepare.cache_clear()
    assert check_sql(QUESTION, REFERENCE, REFERENCE).details == check_sql(QUESTION, REFERENCE, REFERENCE).details


def test_joins_hit_and_literals_are_planted() -> None:
    schema = schema_for_question(QUESTION)
    hints = literal_hints([parse_oracle(find_sql_blocks(REFERENCE)[0].statements[0].text)])
    assert hints["dept"] == ["心内科"] and "2024-01-01 00:00:00" in hints["visit_date"]
    connection = sqlite3.connect(":memory:")
    connection.deserialize(build_database(schema, hints, QUESTION).image)
    joined, visits = (
        connection.execute("SELECT COUNT(*) FROM OUTPATIENT_VISIT v JOIN PATIENT p USING (patient_id)").fetchone()[0],
        connection.execute("SELECT COUNT(*) FROM OUTPATIENT_VISIT").fetchone()[0],
    )
    assert joined >= 0.8 * visits and joined < visits  # mostly hits, a few orphans and NULLs
    planted = connection.execute("SELECT COUNT(*) FROM OUTPATIENT_VISIT WHERE dept = '心内科'").fetchone()[0]
    assert 0.1 * visits <= planted <= 0.6 * visits
    keys = connection.execute("SELECT COUNT(*), COUNT(DISTINCT patient_id) FROM PATIENT").fetchone()
    assert keys[0] == keys[1]


# --- the pieces ---------------------------------------------------------------------------------


def test_schema_prose_variants() -> None:
    text = """1. 标签表 (PATIENT_TAG)
字段名: TAG_ID (数据类型: NUMBER(10)): 标签唯一标识 (主键)
字段名：RATE（数据类型：NUMBER(5, 4)）：比例
字段名：AUDIT_ID（数据类型：NUMBER GENERATED BY DEFAULT ON NULL AS IDENTITY）：审计ID
字段名：T（数据类型：TIMESTAMP DEFAULT CURRENT_TIMESTAMP）：时间
2. 报告表（imaging_report）
字段名：report_id（数据类型：VARCHAR (30)）：报告ID (主键组成部分1)
字段名：content（数据类型：CLOB）：内容"""
    tag, report = parse_schema_text(text).tables
    assert [(c.name, c.sql_type, c.family) for c in tag.columns] == [
        ("TAG_ID", "NUMBER(10)", "integer"),
        ("RATE", "NUMBER(5, 4)", "real"),
        ("AUDIT_ID", "NUMBER GENERATED BY DEFAULT ON NULL AS IDENTITY", "integer"),
        ("T", "TIMESTAMP DEFAULT CURRENT_TIMESTAMP", "timestamp"),
    ]
    assert tag.primary_key.name == "TAG_ID" and tag.label == "标签表"
    assert report.primary_key is None and report.columns[0].family == "text"  # part of a composite key
    with pytest.raises(SchemaError, match="line 1: column 'x' appears before any table"):
        parse_schema_text("字段名：x（数据类型：DATE）：日期")


def test_sql_extraction() -> None:
    answer = (
        "```\n┌─ diagram ─┐\n```\n```SQL\nSELECT 'a;b' -- c;\n FROM DUAL; /* ; */ SELECT 2 FROM DUAL;\n```\n"
        "```\nWITH x AS (SELECT 1 FROM DUAL) SELECT * FROM x\n```\n```sql\nSELECT 3 FROM DUAL"
    )
    blocks = find_sql_blocks(answer)
    assert [[s.text for s in b.statements] for b in blocks] == [
        ["SELECT 'a;b' -- c;\n FROM DUAL", "SELECT 2 FROM DUAL"],
        ["WITH x AS (SELECT 1 FROM DUAL) SELECT * FROM x"],
        ["SELECT 3 FROM DUAL"],
    ]
    bare = find_sql_blocks(
        "可以这样写：\nSELECT name\nFROM PATIENT;\n然后检查结果。\nUPDATE PATIENT SET age = 1\n\n完成"
    )
    assert [(b.statements[0].text, b.statements[0].kind, b.fenced) for b in bare] == [
        ("SELECT name\nFROM PATIENT", "query", False),
        ("UPDATE PATIENT SET age = 1", "dml", False),
    ]
    plsql = split_statements("DECLARE\n  v NUMBER;\nBEGIN\n  NULL;\nEND;\n/\nCOMMIT;\nCREATE INDEX i ON t(a);")
    assert [s.kind for s in plsql] == ["plsql", "transaction", "other"]


def test_rewrites_on_the_tree() -> None:
    sql = to_sqlite(
        parse_oracle("SELECT d + 1, d - e, d - 1.5, TRUNC(SYSDATE) - 30, a || NULL FROM t WHERE ROWNUM < 4"),
        {"d", "e"},
        "2024-12-31 12:00:00",
    )
    now = "ORA_CANON_TS('2024-12-31 12:00:00')"
    assert sql == (
        f"SELECT ORA_DATE_ADD(d, 1), ORA_DAYS_BETWEEN(d, e), ORA_DATE_ADD(d, -(1.5)), "
        f"ORA_DATE_ADD(DATE_TRUNC('DD', {now}), -(30)), NULLIF(COALESCE(a, '') || COALESCE(NULL, ''), '') "
        "FROM t LIMIT 3"
    )


def test_the_pinned_clock_is_a_date_in_arithmetic() -> None:
    fixture = "CREATE TABLE T (d DATE);"
    query = fenced("SELECT SYSDATE - DATE '2024-12-01', SYSDATE + 1, TO_CHAR(SYSTIMESTAMP, 'YYYY') FROM DUAL")
    result = check_sql("", query, query, fixture=fixture)
    assert result.outcome == "match" and result.details["reference_informative"]
    connection = sqlite3.connect(":memory:")
    register_oracle_functions(connection)
    now = build_database(schema_for_question("", fixture), {}, "").now
    sql = to_sqlite(parse_oracle("SELECT SYSDATE - DATE '2024-12-01', SYSDATE + 1"), set(), now)
    assert now == "2024-12-31 12:00:00" and connection.execute(sql).fetchone() == (30.5, "2025-01-01 12:00:00")


def test_oracle_date_functions_by_hand() -> None:
    assert add_months("2024-01-31 00:00:00", 1) == "2024-02-29 00:00:00"  # clipped to the month's end
    assert add_months("2024-02-29 00:00:00", 12) == "2025-02-28 00:00:00"
    assert add_months("2024-04-30 00:00:00", 1) == "2024-05-31 00:00:00"  # last day stays last day
    assert months_between("2024-03-31 00:00:00", "2024-02-29 00:00:00") == 1.0
    assert months_between("2024-03-16 00:00:00", "2024-01-15 00:00:00") == pytest.approx(2 + 1 / 31)
    assert days_between("2024-03-01 12:00:00", "2024-02-28 00:00:00") == 2.5  # 2024 is a leap year
    assert to_char("2024-05-06 07:08:09", "YYYY-MM-DD HH24:MI") == "2024-05-06 07:08"
    assert to_char(3.14159, "FM990.00") == "3.14"
    connection = sqlite3.connect(":memory:")
    register_oracle_functions(connection)
    row = connection.execute(
        "SELECT REGEXP_LIKE('abc123', '^[a-z]+[[:digit:]]+$'), 'x' REGEXP 'y', "
        "ORA_LISTAGG(0, v, ',', k, 1) FROM (SELECT 'a' v, 1 k UNION ALL SELECT 'b', 2)"
    ).fetchone()
    assert row == (1, 0, "b,a")  # LISTAGG ... WITHIN GROUP (ORDER BY k DESC)
    letters = "SELECT REGEXP_LIKE('心内科', '^[[:alpha:]]+$'), REGEXP_LIKE('x_1', '^[[:alpha:]_[:digit:]]+$')"
    assert connection.execute(letters).fetchone() == (1, 1)
    checks = to_sqlite(
        parse_oracle(
            "SELECT VALIDATE_CONVERSION(a AS DATE, 'YYYY-MM-DD HH24:MI:SS'), "
            "VALIDATE_CONVERSION(b AS NUMBER) FROM (SELECT '2024-02-30 10:00:00' a, '1e3' b "
            "UNION ALL SELECT '2024-02-29 10:00:00', 'x')"
        ),
        set(),
        "2024-12-31 12:00:00",
    )
    assert connection.execute(checks).fetchall() == [(0, 1), (1, 0)]


def test_normalise_by_hand() -> None:
    assert [
        normalise(v) for v in (3, 3.0000001, -0.0000001, " 心内科 ", "2024-01-02 00:00:00", "2024-01-02 08:00:00", None)
    ] == [3.0, 3.0, 0.0, "心内科", "2024-01-02", "2024-01-02 08:00:00", None]


@settings(max_examples=25, deadline=None)
@given(st.permutations(["visit_id", "patient_id", "dept", "visit_date", "fee"]))
def test_any_column_order_of_the_same_query_matches(columns: list[str]) -> None:
    reference = fenced(
        "SELECT visit_id, patient_id, dept, visit_date, fee FROM OUTPATIENT_VISIT WHERE dept <> '呼吸科'"
    )
    assert (
        check(f"SELECT {', '.join(columns)} FROM OUTPATIENT_VISIT WHERE dept != '呼吸科'", reference).outcome == "match"
    )


@settings(max_examples=200, deadline=None)
@given(
    st.one_of(
        st.none(),
        st.integers(-(10**9), 10**9),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
        st.text(max_size=20),
    )
)
def test_normalise_is_idempotent(value: object) -> None:
    assert normalise(normalise(value)) == normalise(value)


# --- the real suite -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dbops() -> list[dict]:
    if not DBOPS.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{DBOPS} is missing: the reference suites are required in CI")
        pytest.skip(
            f"MedDBOps not found at {DBOPS} (../shared/data beside the repo); the real-suite SQL test is skipped"
        )
    return [json.loads(line) for line in DBOPS.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_medbops_references_execute_and_match_themselves(dbops: list[dict]) -> None:
    """The issue's target: at least 90% of the 30 references run. Two cannot: their answer is PL/SQL
    (a stored procedure with MERGE; an anonymous block), which is never executed."""
    results = [check_sql(row["question"], row["answer"], row["answer"]) for row in dbops]
    runnable = [r for r in results if r.outcome != "reference_not_executable"]
    assert len(dbops) == 30 and len(runnable) / len(dbops) >= 0.9, [r.details.get("reason") for r in results]
    assert all(r.outcome == "match" for r in runnable), [
        (i, r.details) for i, r in enumerate(results) if r.outcome == "mismatch"
    ]
    assert sum(r.details["reference_informative"] for r in runnable) >= 0.8 * len(runnable)
