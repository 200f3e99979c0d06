"""The parse ladder and one parser per verdict shape: a judge's reply text → a verdict or a ParseFailure.

- ``ladder``          — the rungs (strict JSON → repaired JSON → labelled text), field aliases, shared readers
- ``repair``          — the text repairs of the ``repaired`` rung (reasoning, fences, full-width, quotes)
- ``rubric``          — ``parse_rubric``: the four-dimension verdict (``reference``, ``criteria``)
- ``probe``           — ``parse_probe``: success / failure and the behaviour (``probe``)
- ``hallu``           — ``parse_claims``: atomic claims and their labels (``hallu``)
- ``criteria_items``  — ``parse_criteria_items``: met / not met per criterion id (``criteria_items``)
- ``freshness``       — ``parse_freshness``: current / drifted / uncertain, the guideline named (``freshness``)
- ``pairwise``        — ``parse_pairwise``: which of two answers is better, A / B / tie (``pairwise``)

Each contract names its parser in its declaration (``judge.contracts``); the parsers are
re-exported here for callers outside the judge.
"""

from judge.parse.criteria_items import parse_criteria_items
from judge.parse.freshness import parse_freshness
from judge.parse.hallu import parse_claims
from judge.parse.pairwise import parse_pairwise
from judge.parse.probe import parse_probe
from judge.parse.rubric import parse_rubric

__all__ = ["parse_claims", "parse_criteria_items", "parse_freshness", "parse_pairwise", "parse_probe", "parse_rubric"]
