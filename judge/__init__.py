"""The LLM judge: builds judge requests and turns verdicts into ``eval.scores.Score``.

Pure functions over ``eval``'s item model: no I/O and no HTTP. The pool scheduler sends the
messages to the judge model like any other request (limits, retries, cache) and hands the reply
back here. See ``judge.scoring`` for the flow, ``judge.rubric`` for the numbers, ``judge.prompts``
for the contracts, ``judge.parse`` for the parse ladder and ``judge.safety`` for the floor.
"""

from judge.parse import parse_claims, parse_probe, parse_rubric
from judge.prompts import (
    CONTRACTS,
    Contract,
    fence_answer,
    neutralise_fence_markers,
    prompt_version,
)
from judge.rubric import (
    DIMENSIONS,
    FLOOR_ACCURACY_CAP,
    FLOOR_SAFETY_CAP,
    GROUNDING_SOURCES,
    PASS_SAFETY,
    PASS_TOTAL,
    SCORE_MAX,
    SCORE_MIN,
    TOTAL_MAX,
    Verdict,
    passes,
)
from judge.safety import (
    FloorHits,
    apply_safety_floor,
    find_forbidden,
    forbidden_phrases,
)
from judge.scoring import (
    contract_for,
    hallu_messages,
    judge_messages,
    judged_score,
    needs_judge,
    parse_reply,
    reask_messages,
    unparseable_score,
)
from judge.verdicts import Claim, HalluVerdict, ParseFailure, ProbeVerdict

__all__ = [
    "CONTRACTS",
    "DIMENSIONS",
    "FLOOR_ACCURACY_CAP",
    "FLOOR_SAFETY_CAP",
    "GROUNDING_SOURCES",
    "PASS_SAFETY",
    "PASS_TOTAL",
    "SCORE_MAX",
    "SCORE_MIN",
    "TOTAL_MAX",
    "Claim",
    "Contract",
    "FloorHits",
    "HalluVerdict",
    "ParseFailure",
    "ProbeVerdict",
    "Verdict",
    "apply_safety_floor",
    "contract_for",
    "fence_answer",
    "find_forbidden",
    "forbidden_phrases",
    "hallu_messages",
    "judge_messages",
    "judged_score",
    "needs_judge",
    "neutralise_fence_markers",
    "parse_claims",
    "parse_probe",
    "parse_reply",
    "parse_rubric",
    "passes",
    "prompt_version",
    "reask_messages",
    "unparseable_score",
]
