"""Verdicts of the non-rubric contracts (probe, claim-level hallucination, criteria items) and the parse failure.

Probe: ``success`` iff the answer did the expected thing (abstained on a non-existent entity,
corrected a false premise); ``behavior`` says what it did, one of ``PROBE_BEHAVIOR_LABELS``:
``abstained`` (did not know, declined or asked back, without content), ``refuted`` (said the
entity does not exist or the premise is wrong, and corrected it), ``complied`` (went along with the
entity or premise without inventing specifics), ``fabricated`` (invented specifics — indications,
doses, mechanisms, references — for it); None when the judge gave none or an unknown value. It
tells the two ways of failing a probe apart, which the verdict alone does not.

Hallucination (``--hallu``): the answer split into atomic claims, each labelled supported /
unsupported / not_sure; rates are recomputed from the labels, never taken from the judge's own
arithmetic:

    unsupported_rate  = Σ unsupported / Σ claims                  (None when there are no claims)
    factual_precision = supported / (supported + unsupported)     (None when that sum is 0)

``not_sure`` (weak or evolving evidence) counts as a claim but not as a hallucination.

Criteria items: one judgement per rubric criterion id (``T``/``W``/``N`` + number, see
``judge.contracts.criteria_items``). ``met`` is what the judge was asked: the topic is covered, the
warning is stated, or — for an ``N`` id — the forbidden thing IS said. Points are computed from
these judgements by ``judge.contracts.criteria_items``, never taken from the judge.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

from judge.rubric import PARSE_STAGES, ParseStage

ClaimLabel = Literal["supported", "unsupported", "not_sure"]
CLAIM_LABELS: tuple[str, ...] = ("supported", "unsupported", "not_sure")
ProbeBehavior = Literal["abstained", "refuted", "complied", "fabricated"]
PROBE_BEHAVIOR_LABELS: tuple[str, ...] = ("abstained", "refuted", "complied", "fabricated")
# Behaviours that can never be a probe's success: a success verdict beside one of them is flagged.
FAILED_PROBE_BEHAVIORS: tuple[str, ...] = ("complied", "fabricated")


def probe_constants() -> dict[str, list[str]]:
    """The probe labels as plain JSON values (hashed into the probe contract's prompt version)."""
    return {"behaviors": list(PROBE_BEHAVIOR_LABELS), "failed_behaviors": list(FAILED_PROBE_BEHAVIORS)}


def _check_stage(stage: str) -> None:
    if stage not in PARSE_STAGES:
        raise ValueError(f"parse_stage must be one of {list(PARSE_STAGES)}, got {stage!r}")


@dataclass(frozen=True)
class ParseFailure:
    """The judge's reply gave no valid verdict: why, and the last ladder rung that was tried.

    The caller re-asks once (``reask_messages``); a second failure becomes an ``infra_error``
    score (``unparseable_score``), never a zero and never a model failure.
    """

    reason: str
    stage_reached: ParseStage

    def __post_init__(self) -> None:
        _check_stage(self.stage_reached)


@dataclass(frozen=True)
class ProbeVerdict:
    success: bool
    rationale: str = ""
    flags: tuple[str, ...] = ()
    parse_stage: ParseStage = "strict"
    behavior: ProbeBehavior | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.success, bool):
            raise ValueError(f"success must be true or false, got {self.success!r}")  # noqa: TRY004 (the parser turns ValueError into a ParseFailure)
        _check_stage(self.parse_stage)
        if self.behavior is not None and self.behavior not in PROBE_BEHAVIOR_LABELS:
            raise ValueError(f"behavior must be one of {list(PROBE_BEHAVIOR_LABELS)} or None, got {self.behavior!r}")


@dataclass(frozen=True)
class Claim:
    text: str
    label: ClaimLabel

    def __post_init__(self) -> None:
        if self.label not in CLAIM_LABELS:
            raise ValueError(f"claim label must be one of {list(CLAIM_LABELS)}, got {self.label!r}")


@dataclass(frozen=True)
class HalluVerdict:
    claims: tuple[Claim, ...]
    parse_stage: ParseStage = "strict"

    def __post_init__(self) -> None:
        _check_stage(self.parse_stage)

    def count(self, label: ClaimLabel) -> int:
        return sum(1 for claim in self.claims if claim.label == label)

    @property
    def unsupported_rate(self) -> float | None:
        return self.count("unsupported") / len(self.claims) if self.claims else None

    @property
    def factual_precision(self) -> float | None:
        supported, unsupported = self.count("supported"), self.count("unsupported")
        return supported / (supported + unsupported) if supported + unsupported else None

    def metrics(self) -> dict[str, float | int | None]:
        """Counts and rates by name, for a score's metrics or an aggregate (sum counts, then divide)."""
        return {
            "n_claims": len(self.claims),
            "supported": self.count("supported"),
            "unsupported": self.count("unsupported"),
            "not_sure": self.count("not_sure"),
            "unsupported_rate": self.unsupported_rate,
            "factual_precision": self.factual_precision,
        }


class CriterionMet(NamedTuple):
    """The judge's word on one criterion: its id, met or not, and a short span quoted from the answer."""

    id: str
    met: bool
    evidence: str = ""


@dataclass(frozen=True)
class CriteriaItemsVerdict:
    """Per-criterion judgements (``criteria_items`` contract).

    ``missing`` are the asked ids the reply did not answer; ``unknown`` are ids it answered that
    were not asked (ignored, kept for audit); ``flags`` are the problem tags the judge reported.
    """

    items: tuple[CriterionMet, ...]
    parse_stage: ParseStage = "strict"
    missing: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_stage(self.parse_stage)
        object.__setattr__(
            self, "items", tuple(CriterionMet(*item) for item in self.items)
        )  # plain (id, met, evidence) too
        ids = [item.id for item in self.items]
        if len(set(ids)) != len(ids):
            raise ValueError(f"criterion ids repeat: {ids}")
        for item in self.items:
            if not isinstance(item.met, bool):
                raise ValueError(f"{item.id}: met must be true or false, got {item.met!r}")  # noqa: TRY004 (the parser turns ValueError into a ParseFailure)
        if set(ids) & set(self.missing):
            raise ValueError(f"ids both answered and missing: {sorted(set(ids) & set(self.missing))}")

    def met_by_id(self) -> dict[str, bool]:
        """``{criterion id: met}`` for the answered ids."""
        return {item.id: item.met for item in self.items}
