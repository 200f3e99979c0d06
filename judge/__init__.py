"""The LLM judge: builds judge requests and turns verdicts into ``eval.items.scores.Score``.

Functions over ``eval``'s item model, with no HTTP: the pool scheduler sends the messages to the
judge model like any other request (limits, retries, cache) and hands the reply back here. The only
I/O is the calibration room's (it reads labelled sets and keeps the calibration store). ``judge``
imports only ``eval``.

Rooms, in the order a verdict travels:

- ``contracts/``   — one module per judge contract, each ending in its one declaration
                     (``SPEC = ContractSpec(...)``: template, prompt builder, verdict schema, parser,
                     verdict → score); ``contracts.table`` is the only lookup by name
- ``parse/``       — the parse ladder (strict → repaired → patterns) and one parser per verdict shape
- ``scoring``      — the flow: item → messages → reply → verdict → Score, through the item's contract
- ``rubric``       — the four-dimension rubric: every number once, and the rubric ``Verdict``
- ``verdicts``     — the other verdicts (probe, claims, criteria items) and ``ParseFailure``
- ``side_labels``  — context labels and probe behaviour, read strictly (never guessed)
- ``safety``       — the deterministic safety floor over literal forbidden phrases
- ``injection``    — the check behind the judge's ``injection_attempt`` flag
- ``panel``        — a panel of judges → one verdict (majority, mean, reliability; Dawid–Skene), and
                     ``combine_votes``, the one rule for a whole set of binary votes (criteria, runs and calibration)
- ``pairwise``     — two orders of one pair → one battle (a win only when both agree), position consistency
- ``weighting/``   — probability-weighted verdicts from the judge's token logprobs: expected 0–10 scores,
                     P(met), and a Score read from them (``details.weighted``, ``score_variant``)
- ``perturb``      — the reordered rubric request of ``--rejudge-sample``
- ``calibration/`` — labelled claim set, criteria set with known truth, the calibration store
- ``calibrate``    — ``python -m judge.calibrate``, the former name of ``python -m pool.calibrate``
"""

from judge.contracts.framing import fence_answer, neutralise_fence_markers
from judge.contracts.spec import Contract, ContractSpec
from judge.contracts.table import CONTRACT_SPECS, CONTRACTS, contract_spec, output_schema, prompt_version
from judge.parse import parse_claims, parse_probe, parse_rubric
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
    "CONTRACT_SPECS",
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
    "ContractSpec",
    "FloorHits",
    "HalluVerdict",
    "ParseFailure",
    "ProbeVerdict",
    "Verdict",
    "apply_safety_floor",
    "contract_for",
    "contract_spec",
    "fence_answer",
    "find_forbidden",
    "forbidden_phrases",
    "hallu_messages",
    "judge_messages",
    "judged_score",
    "needs_judge",
    "neutralise_fence_markers",
    "output_schema",
    "parse_claims",
    "parse_probe",
    "parse_reply",
    "parse_rubric",
    "passes",
    "prompt_version",
    "reask_messages",
    "unparseable_score",
]
