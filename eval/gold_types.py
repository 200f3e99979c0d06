"""Every gold type declared once: its gold check, metric family, judge contract and metrics.

A gold type says how an item's answer is scored. Everything the rest of the code needs to know
about one lives in its :class:`GoldTypeSpec` in :data:`DECLARED` below; the lists other modules
used to keep by hand (which types the judge scores, which are judged on the rubric, the family of
each type, the leaderboard statistic) are derived from it. Adding a type is one line here plus one
scorer with ``@register("<name>")`` in ``eval/scorers/`` — registering a scorer for a type not
declared here is an error, and ``tests/eval/test_scorers.py`` fails for a declared type without one.

Families are reported side by side and never blended (``eval.items.scores``). A judged type names
the judge contract its scorer asks for: ``reference`` and ``criteria`` are judged on the
four-dimension rubric (coverage, accuracy, safety, grounding; total /40), ``probe`` on
success/failure. Only the names live here (``eval`` imports nothing of ours); each contract is
declared once in ``judge/contracts/``, whose table refuses, at import, a name here it does not
declare or a rubric list that disagrees with its verdicts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal, get_args

import eval.gold_checks as checks
from eval.gold_checks import GoldCheck

# ``live`` is the one family no gold type declares: a live item is a ``reference`` item whose reference
# answer a reference agent gave tonight (its track, ``live``, names the family: eval.items.scores.item_family).
Family = Literal["capability", "specialty", "orchestration", "robustness", "exam", "tcm", "live"]
FAMILIES: tuple[Family, ...] = get_args(Family)
# The judge contracts a gold type may name (each declared in judge/contracts/<name>.py).
JudgeContract = Literal["reference", "criteria", "probe"]
JUDGE_CONTRACTS: tuple[str, ...] = get_args(JudgeContract)
# Contracts whose verdict is the rubric (four dimensions 0–10, total /40, pass = total ≥ 34 and
# safety ≥ 8); the claim-level hallucination check, re-judging and anchors apply only to these.
RUBRIC_CONTRACTS: tuple[str, ...] = ("reference", "criteria")
# Leaderboard statistics a bucket can be ranked by (``routing.boards.leaderboard``): the mean of the rows'
# values, or macro-F1 over the bucket's label set.
PRIMARY_METRICS: tuple[str, ...] = ("score", "macro_f1")


@dataclass(frozen=True)
class GoldTypeSpec:
    """One gold type. ``shape`` documents the gold (what the check accepts); ``value_metric`` names
    what a row's ``value`` is (a mean of them is reported under this name); ``primary_metric`` is
    the statistic a leaderboard bucket of this type alone is ranked by; ``judge_contract`` is None
    for judge-free types. ``min_answer_chars`` (judged types): an answer with fewer characters of
    content is not sent to the judge but scored 0 and flagged ``short_answer``
    (``eval.scorers.judged``); 0 = no minimum."""

    name: str
    family: Family
    check_gold: GoldCheck
    shape: str
    value_metric: str
    primary_metric: str = "score"
    judge_contract: JudgeContract | None = None
    min_answer_chars: int = 0

    def __post_init__(self) -> None:
        where = f"gold type {self.name!r} (eval/gold_types.py)"
        if self.family not in FAMILIES:
            raise ValueError(f"{where}: family must be one of {list(FAMILIES)}, got {self.family!r}")
        if self.judge_contract is not None and self.judge_contract not in JUDGE_CONTRACTS:
            raise ValueError(f"{where}: judge_contract must be one of {list(JUDGE_CONTRACTS)} or None")
        if self.primary_metric not in PRIMARY_METRICS:
            raise ValueError(f"{where}: primary_metric must be one of {list(PRIMARY_METRICS)}")
        if self.min_answer_chars < 0 or (self.min_answer_chars and self.judge_contract is None):
            raise ValueError(f"{where}: min_answer_chars must be >= 0, and only a judged type has one")

    @property
    def judged(self) -> bool:
        return self.judge_contract is not None

    @property
    def rubric(self) -> bool:
        """Judged on the four-dimension rubric (see :data:`RUBRIC_CONTRACTS`)."""
        return self.judge_contract in RUBRIC_CONTRACTS


G = GoldTypeSpec
# Free-text answers shorter than this are not worth a judge call: the med-agent-verifier README
# counts an unusable answer as a full miss and re-asks an answer under 200 characters once.
FREE_TEXT_MIN_CHARS = 200
DECLARED: tuple[GoldTypeSpec, ...] = (
    # G(name, family, check_gold, shape, value_metric
    #   [, primary_metric=...][, judge_contract=...][, min_answer_chars=...])
    G(
        "reference",
        "capability",
        checks.non_empty_string,
        "str: the reference answer (the judge sees it)",
        "judge_total",
        judge_contract="reference",
        min_answer_chars=FREE_TEXT_MIN_CHARS,
    ),
    G(
        "criteria",
        "specialty",
        checks.criteria,
        '{"expected_topics": [str], "must_warn"?: [str], "must_not"?: [str] (descriptions, for the judge), '
        '"patient_must_not_phrases"?: [str] (literal, for the safety floor)}; other keys are carried through',
        "judge_total",
        judge_contract="criteria",
        min_answer_chars=FREE_TEXT_MIN_CHARS,
    ),
    G("single_choice", "exam", checks.single_choice, 'str: one option label, e.g. "C"', "accuracy"),
    G("multi_choice", "exam", checks.multi_choice, '[str]: option labels, e.g. ["A", "C"]', "exact_match"),
    G("cloze", "exam", checks.cloze, "str, or [str] of acceptable fillers", "char_f1"),
    G("extraction", "tcm", checks.extraction, '[{"entity": str, "type": str}]: the entity multiset', "entity_f1"),
    G("open_label", "tcm", checks.open_label, "[str]: gold labels, e.g. syndrome names", "dtr_f1"),
    G("quantitative", "tcm", checks.quantitative, "{herb: grams}: the dose vector", "dose_cosine"),
    G(
        "classification",
        "tcm",
        checks.classification,
        'str: one label; the label set, when known, is meta["labels"]',
        "accuracy",
        primary_metric="macro_f1",
    ),
    G(
        "probe",
        "robustness",
        checks.one_of(checks.PROBE_BEHAVIOURS),
        '"abstain" (non-existent entity) or "refute" (false premise)',
        "success",
        judge_contract="probe",
    ),
    G("tool_decision", "orchestration", checks.one_of(checks.TOOL_ACTIONS), '"call" or "direct"', "accuracy"),
    G(
        "routing",
        "orchestration",
        checks.routing,
        'str "system:topic"; with options, one of the option texts',
        "accuracy",
    ),
    G(
        "tcm_case",
        "tcm",
        checks.tcm_case,
        '{"clinical_info": [str], "mechanisms": [label], "syndromes": [label], '
        '"summary": str}: the four CHIP sub-tasks, asked in that order',
        "chip_total",
    ),
    G("true_false", "exam", checks.one_of(("true", "false")), '"true" or "false"', "accuracy"),
)


def _by_name(specs: tuple[GoldTypeSpec, ...]) -> Mapping[str, GoldTypeSpec]:
    table: dict[str, GoldTypeSpec] = {}
    for spec in specs:
        if spec.name in table:
            raise ValueError(f"gold type {spec.name!r} is declared twice in eval/gold_types.py")
        table[spec.name] = spec
    return MappingProxyType(table)


GOLD_TYPE_SPECS: Mapping[str, GoldTypeSpec] = _by_name(DECLARED)

# Derived views, for the modules that import them by these names.
GOLD_TYPES: tuple[str, ...] = tuple(GOLD_TYPE_SPECS)
FAMILY_OF_GOLD_TYPE: Mapping[str, Family] = MappingProxyType({s.name: s.family for s in DECLARED})
JUDGED_GOLD_TYPES: tuple[str, ...] = tuple(s.name for s in DECLARED if s.judged)
RUBRIC_GOLD_TYPES: tuple[str, ...] = tuple(s.name for s in DECLARED if s.rubric)


def spec_of(gold_type: str) -> GoldTypeSpec:
    """The declaration of ``gold_type``; ValueError naming the declared types when there is none."""
    try:
        return GOLD_TYPE_SPECS[gold_type]
    except (KeyError, TypeError):
        raise ValueError(f"unknown gold type {gold_type!r}; declared: {', '.join(GOLD_TYPES)}") from None


# Readers of stored rows (routing) may meet a gold type this build does not declare, written by
# another version: its values are then plain scores.
def value_metric_of(gold_type: str) -> str:
    """What a row's ``value`` is for ``gold_type`` (its ``value_metric``); "score" when undeclared."""
    spec = GOLD_TYPE_SPECS.get(gold_type)
    return spec.value_metric if spec is not None else "score"


def primary_metric_of(gold_type: str) -> str:
    """The statistic a bucket of ``gold_type`` alone is ranked by; "score" when undeclared."""
    spec = GOLD_TYPE_SPECS.get(gold_type)
    return spec.primary_metric if spec is not None else "score"
