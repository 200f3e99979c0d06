"""Judge-free scoring dispatched by gold type through one registry (issue 4, item 5).

``score_answer(item, answer_text, status)`` returns an ``eval.scores.Score`` for every type with a
gold label, ``NeedsJudge(contract)`` for the types the LLM judge scores (reference, criteria,
probe). Scorers live by family: ``exam`` (single/multi choice, cloze), ``tcm`` (open labels,
extraction, doses, classification, CHIP cases), ``orchestration`` (routing, tool decision),
``judged`` (with ``checked``: the objective SQL / API-call checks that score a reference item
beside the judge); answer parsing in ``answer_parsing``, ``tcm_parsing`` and ``orchestration_parsing``.
Every Score's ``details`` carry the parsed prediction and the parse notes.
"""

from eval.scorers import exam, judged, orchestration, tcm  # noqa: F401  (importing registers the scorers)
from eval.scorers.answer_parsing import Parsed, clean_answer
from eval.scorers.registry import (
    ANSWER_STATUSES,
    SCORERS,
    NeedsJudge,
    UnknownGoldTypeError,
    register,
    score_answer,
    scorer_for,
)

__all__ = [
    "ANSWER_STATUSES", "SCORERS", "NeedsJudge", "Parsed", "UnknownGoldTypeError", "clean_answer", "register",
    "score_answer", "scorer_for",
]  # fmt: skip
