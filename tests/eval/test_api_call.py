"""API calls scored by structure: the question's signature, the call in an answer, and the BFCL-style
comparison (hand-built cases, hypothesis properties, and the 30 real MedCallAPI items)."""

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval.objective.api_call.check import ApiCallCheck, check_api_call
from eval.objective.api_call.extract import find_api_call
from eval.objective.api_call.signature import parse_api_signature

REPO = Path(__file__).resolve().parents[2]
MEDCALLAPI = REPO.parent / "shared" / "data" / "medbench-agent-95" / "MedCallAPI.jsonl"

QUESTION = (
    "API 描述：BookDialysisSlot（透析时段预约）描述：为住院患者预约血液透析。输入参数："
    "patient_id (string，必填)：住院号。session_count (integer，必填)：预约次数。"
    "weight_kg (number，可选)：干体重（kg）。is_first_time (boolean，必填)：是否首次透析。"
    "session_date (string，必填)：日期，格式 YYYY-MM-DD。"
    'machine_type (string，可选)：机型（"standard"=普通, "hdf"=血液透析滤过），默认为 "standard"。'
    'lab_items (list，选填)：透析前检验（例如：["K", "Cr"]）。notes (string，选填)：备注。'
    '输出：{"slot_id": "", "status": ""}用户问题：给 H100 约三次透析，首次，5 月 24 日开始。'
)
REFERENCE_ARGS = {
    "patient_id": "H100",
    "session_count": 3,
    "is_first_time": True,
    "session_date": "2024-05-24",
    "lab_items": ["K", "Cr"],
}
RESPONSE = {"slot_id": "DS-001", "status": "booked"}


def reference_answer(args: dict = REFERENCE_ARGS) -> str:
    return (
        '## 参数\n| 参数 | 值 |\n|---|---|\n| `patient_id` | `"H100"` |\n\n'
        "## API 调用：`BookDialysisSlot`\n```json\n" + json.dumps(args, ensure_ascii=False, indent=2) + "\n```\n"
        "## 模拟返回\n```json\n" + json.dumps(RESPONSE) + "\n```\n"
    )


def fenced(body: str, lang: str = "json") -> str:
    return f"好的，调用如下：\n```{lang}\n{body}\n```\n"


def check(answer: str, reference: str | None = None) -> ApiCallCheck:
    return check_api_call(QUESTION, reference or reference_answer(), answer)


def verdicts(result: ApiCallCheck) -> dict[str, str]:
    return {p.name: p.verdict for p in result.details.params}


# --- the signature -------------------------------------------------------------------------------


def test_signature_reads_types_requirement_defaults_and_enums() -> None:
    sig = parse_api_signature(QUESTION)
    assert sig is not None and sig.name == "BookDialysisSlot"
    by_name = {p.name: p for p in sig.params}
    assert list(by_name) == [
        "patient_id",
        "session_count",
        "weight_kg",
        "is_first_time",
        "session_date",
        "machine_type",
        "lab_items",
        "notes",
    ]
    assert by_name["session_count"].types == ("integer",) and by_name["session_count"].required is True
    assert by_name["weight_kg"].types == ("number",) and by_name["weight_kg"].required is False
    assert by_name["lab_items"].types == ("array",) and by_name["notes"].required is False
    machine = by_name["machine_type"]
    assert machine.has_default and machine.default == "standard" and machine.enum == ("standard", "hdf")
    assert not by_name["patient_id"].has_default


def test_signature_nests_indented_and_unmarked_fields_under_an_object() -> None:
    indented = parse_api_signature(
        "API 描述：LogVitals（记录）输入参数：order_id (string，必填)：医嘱。results (list，必填)：每项一对象。"
        "  - code (string，必填)：代码。  - value (number/string，必填)：数值。notes (string，可选)：备注。输出：{}"
    )
    assert [p.name for p in indented.params] == ["order_id", "results", "notes"]
    results = indented.param("results")
    assert [(q.name, q.types) for q in results.properties] == [("code", ("string",)), ("value", ("number", "string"))]
    unmarked = parse_api_signature(
        "API 描述：AskBed（床位）输入参数：vitals (object，必填)：包含：hr (number): 心率 bp (string): 血压"
        "score (number，非必填)：评分 english_flag (bool, optional, default true): x 输出：{}"
    )
    assert [p.name for p in unmarked.params] == ["vitals", "score", "english_flag"]
    assert [q.name for q in unmarked.param("vitals").properties] == ["hr", "bp"]
    assert unmarked.param("score").required is False
    flag = unmarked.param("english_flag")
    assert flag.types == ("boolean",) and flag.required is False and flag.has_default and flag.default is True


def test_a_question_without_an_api_has_no_signature() -> None:
    assert parse_api_signature("请解释一下高血压的治疗原则。") is None


# --- forms of a call ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(reference_answer(), id="bare-json-named-in-backticks"),
        pytest.param(
            fenced(
                'BookDialysisSlot(patient_id="H100", session_count=3, is_first_time=true, '
                'session_date="2024-05-24", lab_items=["K", "Cr"])',
                "python",
            ),
            id="python-kwargs",
        ),
        pytest.param(fenced("BookDialysisSlot(" + json.dumps(REFERENCE_ARGS) + ")"), id="name-of-json"),
        pytest.param(fenced(json.dumps({"name": "BookDialysisSlot", "arguments": REFERENCE_ARGS})), id="wrapper"),
        pytest.param(
            json.dumps(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "BookDialysisSlot", "arguments": json.dumps(REFERENCE_ARGS)},
                        }
                    ],
                }
            ),
            id="tool-calls",
        ),
        pytest.param(fenced(json.dumps({"BookDialysisSlot": REFERENCE_ARGS})), id="keyed"),
        pytest.param("POST /api/v1/BookDialysisSlot\n" + json.dumps(REFERENCE_ARGS), id="http-path"),
        pytest.param(fenced(str(REFERENCE_ARGS), "python"), id="python-dict-implied-name"),
    ],
)
def test_every_form_of_the_same_call_matches(answer: str) -> None:
    result = check(answer)
    assert (result.outcome, result.passed, result.param_score) == ("match", True, 1.0), result.to_dict()


def test_chinese_punctuation_is_normalised_before_parsing() -> None:
    python_like = (
        "BookDialysisSlot（patient_id＝“H100”，session_count＝３，is_first_time＝true，"
        "session_date＝“2024年5月24日”，lab_items＝［“K”，“Cr”］）"
    )
    assert check(python_like).outcome == "match"
    json_like = (
        "{“patient_id”：“H100”，“session_count”：3，“is_first_time”：true，“session_date”：“2024/05/24”，"
        "“lab_items”：[“Cr”，“K”]，}"
    )
    result = check(fenced(json_like))
    assert result.outcome == "match", result.to_dict()
    assert result.details.answer_call.name_source == "implied"


def test_the_simulated_response_is_not_the_call() -> None:
    call = find_api_call(reference_answer(), parse_api_signature(QUESTION))
    assert call is not None and call.args == REFERENCE_ARGS and call.name == "BookDialysisSlot"
    only_response = check("## 模拟返回\n" + fenced(json.dumps(RESPONSE)))
    assert (only_response.outcome, only_response.passed, only_response.param_score) == ("no_call_found", False, 0.0)
    response_first = check(
        fenced(json.dumps(RESPONSE)) + fenced("BookDialysisSlot(" + json.dumps(REFERENCE_ARGS) + ")")
    )
    assert response_first.outcome == "match"


def test_a_reference_without_a_call_is_unscorable_not_zero() -> None:
    result = check(fenced(json.dumps(REFERENCE_ARGS)), reference="我需要更多信息才能调用接口。")
    assert (result.outcome, result.passed, result.param_score) == ("reference_unparseable", None, None)
    assert "fix the item's answer" in result.details.notes[0]


# --- the comparison -------------------------------------------------------------------------------


def call_with(**changes) -> str:
    args = {**REFERENCE_ARGS, **changes}
    return fenced(
        "BookDialysisSlot(" + json.dumps({k: v for k, v in args.items() if v is not ...}, ensure_ascii=False) + ")"
    )


def test_missing_required_parameter_fails_with_partial_credit() -> None:
    result = check(call_with(session_count=..., session_date=...))
    assert result.outcome == "mismatch" and result.passed is False
    assert result.param_score == pytest.approx(3 / 5)  # 3 of the reference's 5 parameters right
    missing = {p.name: p for p in result.details.params if p.verdict == "missing"}
    assert set(missing) == {"session_count", "session_date"} and missing["session_count"].note == "required"


def test_hallucinated_and_extra_parameters_fail_but_keep_full_param_score() -> None:
    hallucinated = check(call_with(ward="3B"))
    assert verdicts(hallucinated)["ward"] == "hallucinated"
    assert (hallucinated.passed, hallucinated.param_score) == (False, 1.0)
    extra = check(call_with(weight_kg=61.5))
    assert verdicts(extra)["weight_kg"] == "extra" and extra.passed is False
    default = check(call_with(machine_type="STANDARD"))  # the declared default, enum-like so case-folded
    assert default.passed is True and verdicts(default)["machine_type"] == "ok"


def test_optional_default_in_the_reference_may_be_omitted() -> None:
    reference = reference_answer({**REFERENCE_ARGS, "machine_type": "standard"})
    result = check(call_with(), reference=reference)
    assert result.passed is True
    assert {p.name: p.note for p in result.details.params}["machine_type"] == "omitted_default"
    other = check(call_with(), reference=reference_answer({**REFERENCE_ARGS, "machine_type": "hdf"}))
    assert verdicts(other)["machine_type"] == "missing"


@pytest.mark.parametrize(
    ("changes", "verdict", "note"),
    [
        ({"session_count": "3"}, "ok", "coerced string→number"),
        ({"session_count": 3.0}, "ok", ""),
        ({"session_count": "３"}, "ok", "coerced string→number"),
        ({"session_count": "three"}, "wrong_value", ""),
        ({"session_count": 4}, "wrong_value", ""),
        ({"is_first_time": "true"}, "ok", "coerced string→boolean"),
        ({"is_first_time": "是"}, "ok", "coerced string→boolean"),
        ({"is_first_time": False}, "wrong_value", ""),
        ({"is_first_time": 1}, "wrong_value", ""),
        ({"patient_id": " Ｈ100 "}, "ok", ""),
        ({"patient_id": "h100"}, "wrong_value", ""),  # not enum-like: identifiers keep their case
        ({"session_date": "2024年5月24日"}, "ok", ""),
        ({"session_date": "2024-05-25"}, "wrong_value", ""),
        ({"lab_items": ["Cr", "K"]}, "ok", ""),
        ({"lab_items": ["K", "K", "Cr"]}, "wrong_value", ""),
        ({"lab_items": "K,Cr"}, "wrong_value", ""),
    ],
)
def test_values_compare_by_declared_type(changes: dict, verdict: str, note: str) -> None:
    result = check(call_with(**changes))
    (name,) = changes
    (param,) = [p for p in result.details.params if p.name == name]
    assert (param.verdict, param.note) == (verdict, note)
    assert result.passed is (verdict == "ok")


def test_name_must_match_exactly_and_a_case_only_match_is_recorded() -> None:
    case_only = check(fenced("bookDialysisSlot(" + json.dumps(REFERENCE_ARGS) + ")"))
    assert case_only.details.name_verdict == "case_only" and case_only.details.case_insensitive_match
    assert (case_only.passed, case_only.param_score) == (False, 1.0)
    other = check(fenced(json.dumps({"name": "BookBed", "arguments": REFERENCE_ARGS})))
    assert other.details.name_verdict == "mismatch" and not other.details.case_insensitive_match
    trimmed = check(fenced(json.dumps({"name": " BookDialysisSlot ", "arguments": REFERENCE_ARGS})))
    assert trimmed.passed is True


def test_a_placeholder_in_the_reference_must_stay_open() -> None:
    reference = reference_answer({**REFERENCE_ARGS, "patient_id": "<待补充>"})
    assert check(call_with(patient_id="【待补充：住院号】"), reference=reference).passed is True
    assert check(call_with(patient_id=...), reference=reference).passed is True
    invented = check(call_with(patient_id="H999"), reference=reference)
    assert verdicts(invented)["patient_id"] == "wrong_value" and invented.passed is False


def test_to_dict_is_json_ready() -> None:
    record = check(call_with(session_count="3", ward="3B")).to_dict()
    assert json.loads(json.dumps(record, ensure_ascii=False)) == record
    assert record["outcome"] == "mismatch" and record["name"]["verdict"] == "ok"
    assert {p["name"]: p["verdict"] for p in record["params"]}["ward"] == "hallucinated"
    assert record["signature"]["required"] == ["patient_id", "session_count", "is_first_time", "session_date"]


def test_text_full_of_parentheses_and_braces_is_bounded() -> None:
    hostile = "f(" * 3000 + ")" * 3000 + "{" * 3000 + "BookDialysisSlot(" * 500
    assert check(hostile).outcome == "no_call_found"


# --- properties -----------------------------------------------------------------------------------

TEXT = st.text(alphabet="abcXYZ019 -_.:，。血压心率透析", min_size=1, max_size=12).filter(lambda s: s.strip())
VALUE_OF = {
    "patient_id": TEXT,
    "session_count": st.integers(-(10**6), 10**6),
    "weight_kg": st.floats(allow_nan=False, allow_infinity=False, width=32),
    "is_first_time": st.booleans(),
    "session_date": st.dates().map(lambda d: d.isoformat()),
    "machine_type": st.sampled_from(["hdf", "standard"]),
    "lab_items": st.lists(TEXT, max_size=4),
    "notes": TEXT,
}
REQUIRED = ("patient_id", "session_count", "is_first_time", "session_date")


@st.composite
def calls(draw: st.DrawFn) -> dict:
    optional = draw(st.lists(st.sampled_from([k for k in VALUE_OF if k not in REQUIRED]), unique=True))
    return {k: draw(VALUE_OF[k]) for k in (*REQUIRED, *optional)}


def render(args: dict, form: str, indent: int | None, fence: bool) -> str:
    if form == "python":
        body = (
            "BookDialysisSlot(" + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items()) + ")"
        )
    elif form == "wrapper":
        body = json.dumps({"name": "BookDialysisSlot", "arguments": args}, ensure_ascii=False, indent=indent)
    elif form == "tool_calls":
        function = {"name": "BookDialysisSlot", "arguments": json.dumps(args, ensure_ascii=False)}
        body = json.dumps({"tool_calls": [{"type": "function", "function": function}]}, indent=indent)
    else:
        body = "调用 `BookDialysisSlot`：\n" + json.dumps(args, ensure_ascii=False, indent=indent)
    return fenced(body) if fence else f"  {body}\n\n"


@settings(max_examples=150, deadline=None)
@given(
    calls(),
    st.randoms(use_true_random=False),
    st.sampled_from(["python", "wrapper", "tool_calls", "json"]),
    st.sampled_from([None, 0, 2, 4]),
    st.booleans(),
)
def test_a_call_matches_itself_in_any_form_order_and_layout(args, random, form, indent, fence) -> None:
    keys = list(args)
    random.shuffle(keys)
    result = check(render({k: args[k] for k in keys}, form, indent, fence), reference=reference_answer(args))
    assert (result.outcome, result.param_score) == ("match", 1.0), result.to_dict()


@settings(max_examples=100, deadline=None)
@given(calls(), st.data())
def test_dropping_a_parameter_costs_exactly_its_share(args, data) -> None:
    droppable = [k for k in args if not (k == "machine_type" and args[k] == "standard")]
    dropped = data.draw(st.sampled_from(droppable))
    answer = render({k: v for k, v in args.items() if k != dropped}, "python", None, True)
    result = check(answer, reference=reference_answer(args))
    assert result.passed is False and verdicts(result)[dropped] == "missing"
    assert result.param_score == pytest.approx((len(args) - 1) / len(args))


@settings(max_examples=60, deadline=None)
@given(calls(), st.text(alphabet="qwxyz_", min_size=3, max_size=8))
def test_an_undeclared_key_is_always_hallucinated(args, key) -> None:
    result = check(render({**args, key: 1}, "json", 2, True), reference=reference_answer(args))
    assert verdicts(result)[key] == "hallucinated" and result.passed is False and result.param_score == 1.0


# --- the real suite -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def medcallapi() -> list[dict]:
    if not MEDCALLAPI.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{MEDCALLAPI} is missing: the reference suites are required in CI")
        pytest.skip(f"{MEDCALLAPI} not found (../shared/data beside the repo); MedCallAPI tests skipped")
    return [json.loads(line) for line in MEDCALLAPI.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_real_references_parse_and_match_themselves(medcallapi: list[dict]) -> None:
    assert len(medcallapi) == 30
    results = [check_api_call(r["question"], r["answer"], r["answer"]) for r in medcallapi]
    matched = sum(r.outcome == "match" for r in results)
    print(f"MedCallAPI: {matched}/{len(results)} references parse and match themselves")
    assert matched >= 0.9 * len(results)
    for record in medcallapi:
        signature = parse_api_signature(record["question"])
        assert signature is not None and signature.name and len(signature.params) >= 4
        call = find_api_call(record["answer"], signature)
        if call is not None:
            assert call.name == signature.name and set(call.args) <= signature.param_names


def test_real_references_do_not_match_each_other(medcallapi: list[dict]) -> None:
    for this, other in zip(medcallapi, medcallapi[1:] + medcallapi[:1], strict=True):
        result = check_api_call(this["question"], this["answer"], other["answer"])
        assert result.outcome in ("mismatch", "no_call_found") and result.passed is False
