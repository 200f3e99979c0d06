"""Broad clinical areas above the specialty system: 内科 / 精神科 ▸ system ▸ domain.

The med-agent-verifier README's leaderboard leads with two rollups, 内科 (internal medicine) and
精神科 (psychiatry), over its ``system:topic`` domains, and its criteria gold comes from two sources:
an internists' file and a psy(chiatry) file. A domain slug names a system, not the area, and one
system can be asked from both sides (substance use, sleep), so the area is a level of its own.

An item's broad area, first match wins:

1. its own ``broad_area`` — in ``meta`` (a criteria YAML record's extra keys land there; a medpool
   JSONL line writes ``"meta": {"broad_area": "内科"}``): any name without ``/`` or spaces;
2. the source it came from: its task (the file's stem for criteria YAML), then its suite, named in
   an area's ``sources`` (``internists`` → 内科, ``psy`` → 精神科);
3. its domain's system in an area's ``systems`` (``cardiology`` → 内科);
4. :data:`OTHER`.

Every area is declared once in :data:`BROAD_AREAS`; adding one is one row. Scoring writes the area
into each score row (``broad_area``), so the leaderboard's ``specialty/broad_area/<name>`` buckets and
``python -m eval.inventory`` agree.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OTHER = "other"  # no declared field, source or system says otherwise
_NAME = re.compile(r"^[^/\s]+$")  # a bucket name: ids are family/kind/name


@dataclass(frozen=True)
class BroadArea:
    """One broad area: the suites or tasks whose items all belong to it, and the domain systems that
    do when an item's source says nothing."""

    name: str
    sources: tuple[str, ...]
    systems: tuple[str, ...]


BROAD_AREAS: tuple[BroadArea, ...] = (
    BroadArea(
        "内科",
        sources=("internists",),  # internal medicine
        systems=(
            "cardiology",
            "respiratory",
            "digestive",
            "endocrine",
            "hematology",
            "renal",
            "rheumatology",
            "infectious",
            "neurology",
        ),
    ),
    BroadArea(
        "精神科",
        sources=("psy",),  # psychiatry
        systems=("psychiatry", "depressive", "anxiety", "bipolar", "psychotic"),
    ),
)
AREA_NAMES: tuple[str, ...] = tuple(area.name for area in BROAD_AREAS)
_BY_SOURCE: Mapping[str, str] = {source: area.name for area in BROAD_AREAS for source in area.sources}
_BY_SYSTEM: Mapping[str, str] = {system: area.name for area in BROAD_AREAS for system in area.systems}


def _check_declarations() -> None:
    """A source or system claimed by two areas would make the rule order-dependent: refuse it here."""
    for what, attribute in (("source", "sources"), ("system", "systems")):
        seen: dict[str, str] = {}
        for area in BROAD_AREAS:
            for name in getattr(area, attribute):
                if name in seen:
                    raise ValueError(
                        f"eval/items/broad_areas.py: {what} {name!r} is declared for both {seen[name]} and {area.name}"
                    )
                seen[name] = area.name
    for name in (*AREA_NAMES, OTHER):
        if not _NAME.match(name):
            raise ValueError(f"eval/items/broad_areas.py: broad area {name!r} must have no '/' or spaces")


_check_declarations()


def name_problem(value: Any) -> str | None:
    """What is wrong with a declared ``broad_area`` value (a phrase), or None when it can name a bucket."""
    if not isinstance(value, str) or not _NAME.match(value):
        return f"must be a name without '/' or spaces, such as {AREA_NAMES[0]!r}, got {value!r}"
    return None


def area_of_source(name: str) -> str | None:
    """The area every item of this suite or task belongs to, or None."""
    return _BY_SOURCE.get(name)


def area_of_system(system: str) -> str | None:
    """The area of a domain's system (the part of ``system:topic`` before ``:``), or None."""
    return _BY_SYSTEM.get(system)


def derive(task: str, suite: str, domain: str | None) -> str:
    """Rules 2–4 of the module docstring: the area of an item that declares none."""
    system = domain.split(":", 1)[0] if domain else None
    return area_of_source(task) or area_of_source(suite) or (area_of_system(system) if system else None) or OTHER


def broad_area_of(item: Any) -> str:
    """The broad area of an ``eval.items.Item`` (the module docstring's rules, first match wins; the
    item refused a ``meta.broad_area`` that :func:`name_problem` rejects when it was built)."""
    declared = item.meta.get("broad_area")
    return str(declared) if declared is not None else derive(item.task, item.suite, item.domain)


def area_order(name: str) -> tuple[int, str]:
    """Sort key: the declared areas in declaration order, then any other name, :data:`OTHER` last."""
    if name in AREA_NAMES:
        return (0, f"{AREA_NAMES.index(name):04d}")
    return (2, name) if name == OTHER else (1, name)
