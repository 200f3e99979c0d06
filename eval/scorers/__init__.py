"""Judge-free scoring dispatched by gold type through one registry.

``score_answer(item, answer_text, status)`` returns an ``eval.items.scores.Score`` for every type with a
gold label, ``NeedsJudge(contract)`` for the types the LLM judge scores (reference, criteria,
probe). Scorers live by family: ``exam`` (single/multi choice, cloze), ``tcm`` (open labels,
extraction, doses, classification, CHIP cases), ``orchestration`` (routing, tool decision),
``judged`` (with ``checked``: the objective SQL / API-call checks that score a reference item
beside the judge); answer parsing in ``answer_parsing``, ``tcm_parsing`` and ``orchestration_parsing``.
Every Score's ``details`` carry the parsed prediction and the parse notes.

Every module of this package is imported here, so a scorer registers itself wherever it is written:
a new module needs no line in this file.
"""

import importlib
import pkgutil

from eval.scorers.answer_parsing import Parsed, clean_answer
from eval.scorers.registry import (
    ANSWER_STATUSES,
    SCORERS,
    NeedsJudge,
    UnknownGoldTypeError,
    missing_scorer_message,
    register,
    score_answer,
    scorer_for,
)

for _module in pkgutil.iter_modules(__path__):  # importing a module registers its scorers
    importlib.import_module(f"{__name__}.{_module.name}")

__all__ = [
    "ANSWER_STATUSES",
    "SCORERS",
    "NeedsJudge",
    "Parsed",
    "UnknownGoldTypeError",
    "clean_answer",
    "missing_scorer_message",
    "register",
    "score_answer",
    "scorer_for",
]
