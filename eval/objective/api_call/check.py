"""Score an API call by its structure, BFCL-style (AST matching), instead of by a judge's reading.

``check_api_call(question, reference_answer, model_answer)`` reads the API the question declares
(``eval.objective.api_call.signature``), the call in the reference answer and the call in the model's answer
(``eval.objective.api_call.extract``), and compares them:

- name: equal after trimming, case-sensitive; a case-only difference fails and is recorded
  (``case_insensitive_match``);
- each reference parameter: present in the answer with an equal value after type-aware
  normalisation (``eval.objective.api_call.values``: "10" ≡ 10 for numbers, "true" ≡ true for booleans, dates in
  any common spelling, lists as multisets, enum codes case-folded); an optional parameter the
  answer omits is fine when the reference gives it its declared default;
- a reference value that is a placeholder ("<待补充>", "【待补充：工号】") marks information the user
  has not given: the answer must leave it open too (omit it or write a placeholder), not invent it;
- an answer key the signature does not declare is ``hallucinated``; a declared key the reference
  leaves out is ``extra`` unless its value is the declared default. Both fail, as in BFCL, where a
  parameter outside the possible answer fails the call: the reference is the possible answer;
- a required parameter absent from the reference as well is not held against the answer (the
  reference decided it could not be filled); it is listed in ``notes``.

``passed`` is all-or-nothing: name and every parameter verdict ok. Beside it,
``param_score = #reference parameters judged ok / #reference parameters`` (1.0 when the reference
passes none), a partial credit that ignores the name and extra keys. No call in the answer is a
real result: ``passed=False, param_score=0.0``. A reference with no readable call cannot score
anything: ``passed=None, param_score=None`` — never a zero.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from eval._checks import require_str
from eval.objective.api_call.extract import FoundCall, find_api_call
from eval.objective.api_call.signature import ApiSignature, parse_api_signature
from eval.objective.api_call.values import is_placeholder, json_kind, values_match

Outcome = Literal["match", "mismatch", "no_call_found", "reference_unparseable"]
Verdict = Literal["ok", "missing", "wrong_value", "hallucinated", "extra"]
NameVerdict = Literal["ok", "case_only", "mismatch", "missing", "unchecked"]


@dataclass(frozen=True)
class ParamVerdict:
    """One parameter's verdict; ``reference`` / ``got`` are the raw values (None when absent);
    ``note`` says why an ok was ok or what a failure means ("default", "omitted_default",
    "placeholder", "coerced string→number", "required", ...)."""

    name: str
    verdict: Verdict
    reference: Any = None
    got: Any = None
    note: str = ""


@dataclass(frozen=True)
class CallDetails:
    """What a reader needs to audit the check."""

    name_verdict: NameVerdict
    reference_name: str | None = None
    answer_name: str | None = None
    case_insensitive_match: bool = False
    params: tuple[ParamVerdict, ...] = ()
    reference_call: FoundCall | None = None
    answer_call: FoundCall | None = None
    signature: ApiSignature | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ApiCallCheck:
    """The result of :func:`check_api_call` (see the module docstring for the rules)."""

    outcome: Outcome
    passed: bool | None
    param_score: float | None
    details: CallDetails

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record, e.g. for a score's ``details``."""

        def call(found: FoundCall | None) -> dict[str, Any] | None:
            return None if found is None else {k: v for k, v in asdict(found).items() if k != "position"}

        d = self.details
        signature = d.signature
        return {
            "outcome": self.outcome,
            "passed": self.passed,
            "param_score": self.param_score,
            "name": {
                "verdict": d.name_verdict,
                "reference": d.reference_name,
                "answer": d.answer_name,
                "case_insensitive_match": d.case_insensitive_match,
            },
            "params": [asdict(p) for p in d.params],
            "reference_call": call(d.reference_call),
            "answer_call": call(d.answer_call),
            "signature": None
            if signature is None
            else {
                "name": signature.name,
                "required": [p.name for p in signature.params if p.required],
                "optional": [p.name for p in signature.params if not p.required],
            },
            "notes": list(d.notes),
        }


def _name_verdict(reference: str | None, answer: str | None) -> NameVerdict:
    if reference is None:
        return "unchecked"
    if answer is None:
        return "missing"
    if reference.strip() == answer.strip():
        return "ok"
    return "case_only" if reference.strip().casefold() == answer.strip().casefold() else "mismatch"


def _reference_param(key: str, ref: Any, got_args: dict[str, Any], signature: ApiSignature | None) -> ParamVerdict:
    param = signature.param(key) if signature else None
    if is_placeholder(ref):
        if key not in got_args or is_placeholder(got_args[key]):
            return ParamVerdict(key, "ok", ref, got_args.get(key), "placeholder")
        return ParamVerdict(
            key, "wrong_value", ref, got_args[key], "the reference leaves this open; the answer invents a value"
        )
    if key not in got_args:
        if param is not None and param.has_default and values_match(param.default, ref, param):
            return ParamVerdict(key, "ok", ref, None, "omitted_default")
        return ParamVerdict(key, "missing", ref, None, "required" if param is not None and param.required else "")
    got = got_args[key]
    if not values_match(ref, got, param):
        return ParamVerdict(key, "wrong_value", ref, got)
    kinds = (json_kind(got), json_kind(ref))
    return ParamVerdict(key, "ok", ref, got, "" if kinds[0] == kinds[1] else f"coerced {kinds[0]}→{kinds[1]}")


def _answer_only_param(key: str, got: Any, signature: ApiSignature | None) -> ParamVerdict:
    if signature is None:
        return ParamVerdict(key, "extra", None, got, "not in the reference (no signature to check against)")
    param = signature.param(key)
    if param is None:
        return ParamVerdict(key, "hallucinated", None, got, "not declared by the API")
    if param.has_default and values_match(param.default, got, param):
        return ParamVerdict(key, "ok", None, got, "default")
    return ParamVerdict(key, "extra", None, got, "declared but not in the reference")


def compare_api_calls(reference: FoundCall, answer: FoundCall, signature: ApiSignature | None = None) -> ApiCallCheck:
    """Compare two extracted calls under ``signature`` (see the module docstring)."""
    verdicts = [_reference_param(k, v, answer.args, signature) for k, v in reference.args.items()]
    verdicts += [_answer_only_param(k, v, signature) for k, v in answer.args.items() if k not in reference.args]
    notes: list[str] = []
    if signature is not None:
        undeclared = [k for k in reference.args if signature.param(k) is None]
        if undeclared:
            notes.append(f"the reference passes undeclared parameter(s) {undeclared}; compared as given")
        open_required = [p.name for p in signature.params if p.required and p.name not in reference.args]
        if open_required:
            notes.append(
                f"required parameter(s) {open_required} absent from the reference too; not held against the answer"
            )
        if signature.name and reference.name and signature.name != reference.name:
            notes.append(
                f"the reference calls {reference.name!r}, the question declares {signature.name!r}; "
                "the reference's name is used"
            )
    if answer.name_source == "implied":
        notes.append("the answer gives a bare arguments object without naming the API; the declared name is assumed")
    name_verdict = _name_verdict(reference.name, answer.name)
    n_reference = len(reference.args)
    n_ok = sum(1 for v in verdicts[:n_reference] if v.verdict == "ok")
    passed = name_verdict in ("ok", "unchecked") and all(v.verdict == "ok" for v in verdicts)
    details = CallDetails(
        name_verdict=name_verdict,
        reference_name=reference.name,
        answer_name=answer.name,
        case_insensitive_match=reference.name is not None
        and answer.name is not None
        and reference.name.strip().casefold() == answer.name.strip().casefold(),
        params=tuple(verdicts),
        reference_call=reference,
        answer_call=answer,
        signature=signature,
        notes=tuple(notes),
    )
    return ApiCallCheck("match" if passed else "mismatch", passed, n_ok / n_reference if n_reference else 1.0, details)


def check_api_call(question: str, reference_answer: str, model_answer: str) -> ApiCallCheck:
    """Check the call in ``model_answer`` against the one in ``reference_answer``, under the API
    ``question`` declares. Pure: no I/O, no model calls."""
    require_str("question", question)
    require_str("reference_answer", reference_answer)
    require_str("model_answer", model_answer)
    signature = parse_api_signature(question)
    reference = find_api_call(reference_answer, signature)
    if reference is None:
        note = (
            "no function call found in the reference answer (looked for Name(...), a tool_calls/name+arguments "
            "object or a JSON arguments object whose keys are mostly declared parameters); fix the item's answer"
        )
        return ApiCallCheck(
            "reference_unparseable", None, None, CallDetails("unchecked", signature=signature, notes=(note,))
        )
    answer = find_api_call(model_answer, signature)
    if answer is None:
        details = CallDetails(
            "missing",
            reference.name,
            None,
            reference_call=reference,
            signature=signature,
            notes=("no function call found in the answer",),
        )
        return ApiCallCheck("no_call_found", False, 0.0, details)
    return compare_api_calls(reference, answer, signature)
