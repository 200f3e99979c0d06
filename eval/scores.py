"""What scoring produces: one :class:`Score` per (model, item), and the metric family it belongs to.

Families are reported side by side and never blended into one number:

- ``capability``   — reference-answer items, scored by the LLM judge (total /40, pass);
- ``specialty``    — criteria items, scored by the LLM judge (per domain, safety floor);
- ``orchestration``— routing and tool-decision items (accuracy, judge-free or judge);
- ``robustness``   — hallucination probes (abstain / correct the false premise);
- ``exam``         — single/multi-choice and cloze items (accuracy, option P/R/F1, char-F1);
- ``tcm``          — TCM items: open labels (DTR-F1), extraction, doses, syndrome classification
                     (macro-F1 at aggregate), CHIP cases (P1–P4, total).

A row of ``RUN_DIR/scores.jsonl`` is :meth:`Score.to_record` plus the answer's identity:
``{"model", "item_id", "suite", "track", "task", "domain", "gold_type", "family", "status",
"value", "passed", "metrics", "judge", "details", "latency_s", "completion_tokens"}`` where

- ``status``: ``scored`` (value is meaningful), ``infra_error`` (no answer, or the judge gave no
  parseable verdict — excluded from every mean, counted per cell), ``unscorable`` (the item cannot
  be scored, e.g. an unverified probe);
- ``value``: the primary score in [0, 1] (judge total / 40, accuracy 0/1, F1, CHIP total ...);
- ``passed``: the pass/fail used for correctness matrices and hard subsets (judge: total ≥ 34 and
  safety ≥ 8; deterministic: value ≥ ``PASS_THRESHOLD`` unless the scorer says otherwise);
- ``metrics``: every sub-metric by name (coverage, accuracy, safety, grounding, total, p1..p4, f1,
  precision, recall, ...);
- ``judge``: the judge identity (model, backend, prompt-version hash) or null for judge-free scores;
- ``details``: what a reader needs to audit the score (parsed prediction, rationale, flags).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

Family = Literal["capability", "specialty", "orchestration", "robustness", "exam", "tcm"]
FAMILIES: tuple[Family, ...] = ("capability", "specialty", "orchestration", "robustness", "exam", "tcm")
ScoreStatus = Literal["scored", "infra_error", "unscorable"]

# A continuous score counts as correct for correctness matrices and hard subsets at or above this.
PASS_THRESHOLD = 0.5

FAMILY_OF_GOLD_TYPE: Mapping[str, Family] = MappingProxyType({
    "reference": "capability",
    "criteria": "specialty",
    "routing": "orchestration",
    "tool_decision": "orchestration",
    "probe": "robustness",
    "single_choice": "exam",
    "multi_choice": "exam",
    "cloze": "exam",
    "open_label": "tcm",
    "extraction": "tcm",
    "quantitative": "tcm",
    "classification": "tcm",
    "tcm_case": "tcm",
})  # fmt: skip


def family_of(gold_type: str) -> Family:
    try:
        return FAMILY_OF_GOLD_TYPE[gold_type]
    except KeyError:
        raise ValueError(f"unknown gold type {gold_type!r}; known: {', '.join(FAMILY_OF_GOLD_TYPE)}") from None


@dataclass(frozen=True)
class JudgeIdentity:
    """Who judged: results differing in any of these are never merged."""

    model: str
    backend: str
    prompt_version: str  # sha256 prefix of the prompt template and rubric

    def key(self) -> str:
        return f"{self.model}@{self.backend}#{self.prompt_version}"


@dataclass(frozen=True)
class Score:
    status: ScoreStatus
    value: float | None = None
    passed: bool | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)
    judge: JudgeIdentity | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status == "scored":
            if self.value is None or not 0.0 <= self.value <= 1.0:
                raise ValueError(f"a scored Score needs a value in [0, 1], got {self.value!r}")
        elif self.value is not None:
            raise ValueError(f"a {self.status} Score carries no value")

    def to_record(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "value": self.value,
            "passed": self.passed,
            "metrics": dict(self.metrics),
            "judge": None if self.judge is None else {"model": self.judge.model, "backend": self.judge.backend,
                                                      "prompt_version": self.judge.prompt_version},
            "details": dict(self.details),
        }
