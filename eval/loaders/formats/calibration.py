"""Judge-calibration sets (``items: [{id, kind, context, claim, gold: supported|unsupported|not_sure}]``).

These are labelled claims for measuring a hallucination judge, not questions for the pool: the
registry recognises them so that loading a whole data folder lists them as skipped, with this
reason, instead of failing on an unknown shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eval.items import Item
from eval.loaders.base import Loader


def recognise(sample: Any) -> bool:
    entries = sample.get("items") if isinstance(sample, dict) else None
    return isinstance(entries, list) and any(isinstance(e, dict) and {"claim", "gold"} <= e.keys() for e in entries[:1])


def load(path: Path, suite: str) -> Iterator[Item]:
    return iter(())


LOADER = Loader(
    name="calibration",
    description="hallucination-judge calibration set (labelled claims): not an item suite",
    suffixes=(".yaml", ".yml"),
    recognise=recognise,
    load=load,
    skip_reason="not an item suite: labelled claims for calibrating a hallucination judge",
)
