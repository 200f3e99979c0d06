"""A FAKE pool whose judge can turn strict behind the same identity: the items, the switch and the
behaviour the judge drift (``--anchor-sample``) and ``--rescore --with-judge`` tests share. The
``drift_judge_url`` fixture (tests/pool/conftest.py) serves it with the judge lenient."""

from __future__ import annotations

import json
from typing import Any

from tests.fake_pool import PADDING, reference_items
from tests.fakes import ok

ITEMS = reference_items(8)


class Judge:
    """Whether the FAKE judge has turned strict (every verdict 20/40) or passes every answer (36/40)."""

    strict = False


def behave(index: int, payload: dict[str, Any]) -> Any:
    """Candidates answer a padded text; the judge ``judgey`` scores as :class:`Judge` says."""
    if payload.get("model") != "judgey":
        return ok("回答。" + PADDING)
    scores = (5, 5, 5, 5) if Judge.strict else (9, 9, 9, 9)
    return ok(
        json.dumps(
            dict(zip(("coverage", "accuracy", "safety", "grounding"), scores, strict=True))
            | {"rationale": "r", "grounding_source": "book"}
        )
    )
