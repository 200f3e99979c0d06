"""How the item-selection flags read their values, and what each filter says it dropped.

``--track``, ``--task`` and ``--domain`` take one value or a comma list (``--task
MedShield,MedCallAPI``); ``--id`` is repeatable and takes comma lists too. An item matches a
list when it matches any of its values. A whole value that names a known task or id is never
split, so a name with a comma in it still works.

``--track`` takes the product's tracks (``eval.items.TRACKS``) and the track names the
med-agent-verifier README uses, declared once in :data:`TRACK_ALIASES`. Each filter that drops
items writes a note (how many it kept, how many it dropped and why), which the run prints on
stderr: a narrow selection should never look like a short suite.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eval.items import TRACKS, Item

MAX_NAMES_SHOWN = 12


class SelectionError(ValueError):
    """A selection value cannot be used; the message names the flag and the valid values."""


@dataclass(frozen=True)
class TrackAlias:
    """A track name of the med-agent-verifier README: the (track, gold type) pairs it selects."""

    meaning: str
    kinds: frozenset[tuple[str, str]]


_BOOK = frozenset({("specialty", "criteria")})
_MEDBENCH = frozenset({("capability", "reference")})
# The med-agent-verifier README's --track names, as the product's items: book is its criteria
# suite (Track B), medbench its reference suite (Track A), probe / tool_decision its frozen probe sets.
TRACK_ALIASES: dict[str, TrackAlias] = {
    "book": TrackAlias("criteria items (specialty track)", _BOOK),
    "medbench": TrackAlias("reference items (capability track)", _MEDBENCH),
    "both": TrackAlias("criteria and reference items", _BOOK | _MEDBENCH),
    "probe": TrackAlias("hallucination probe items (orchestration track)", frozenset({("orchestration", "probe")})),
    "tool_decision": TrackAlias(
        "tool-decision items (orchestration track)", frozenset({("orchestration", "tool_decision")})
    ),
}
ORCHESTRATION = "orchestration"


def split_values(value: str | Sequence[str] | None, known: Iterable[str] = ()) -> list[str]:
    """The values of a flag given as a string or a list of strings, comma lists split, in order,
    without repeats; a whole value found in ``known`` is kept as it is."""
    if value is None:
        return []
    known = set(known)
    out: list[str] = []
    for raw in [value] if isinstance(value, str) else value:
        raw = str(raw).strip()
        for part in [raw] if raw in known else raw.split(","):
            part = part.strip()
            if part and part not in out:
                out.append(part)
    return out


def valid_tracks() -> str:
    """The --track names, for help and error messages."""
    aliases = ", ".join(f"{name} = {alias.meaning}" for name, alias in TRACK_ALIASES.items())
    return f"a track ({', '.join(TRACKS)}) or an alias: {aliases}"


def track_matcher(value: str | Sequence[str]) -> Callable[[Item], bool]:
    """Whether an item is on one of the named tracks (product tracks or aliases)."""
    names = split_values(value)
    unknown = [n for n in names if n not in TRACKS and n not in TRACK_ALIASES]
    if unknown or not names:
        shown = ", ".join(unknown) if unknown else repr(_shown(value))
        raise SelectionError(f"--track {shown}: no such track; use {valid_tracks()}; a comma list is allowed")
    tracks = {n for n in names if n in TRACKS}
    kinds: set[tuple[str, str]] = set()
    for name in names:
        if name in TRACK_ALIASES:
            kinds |= TRACK_ALIASES[name].kinds
    return lambda item: item.track in tracks or (item.track, item.gold_type) in kinds


def names_orchestration_items(value: str | Sequence[str] | None) -> bool:
    """Whether ``--track`` asks for orchestration-track items by name (then they are kept without
    ``--orchestration``, as ``--track probe`` asks)."""
    names = split_values(value)
    return ORCHESTRATION in names or any(
        track == ORCHESTRATION for n in names if n in TRACK_ALIASES for track, _ in TRACK_ALIASES[n].kinds
    )


def task_matches(item: Item, wanted: set[str]) -> bool:
    """A task is named by itself (``MedShield``) or as ``python -m eval.datasets`` lists it (``suite/task``)."""
    return item.task in wanted or f"{item.suite}/{item.task}" in wanted


def domain_matches(domain: str | None, wanted: str) -> bool:
    """Exact ``system:topic``, or every topic of a ``system`` (``cardiology`` matches ``cardiology:*``)."""
    if domain is None:
        return False
    return domain == wanted or (":" not in wanted and domain.split(":", 1)[0] == wanted)


def task_names(items: Iterable[Item]) -> set[str]:
    names: set[str] = set()
    for item in items:
        names |= {item.task, f"{item.suite}/{item.task}"}
    return names


def unmatched(values: Sequence[str], items: Sequence[Item], match: Callable[[Item, str], bool]) -> list[str]:
    """The values that match none of ``items`` (a typo, or data that lacks them)."""
    return [v for v in values if not any(match(item, v) for item in items)]


def kept_note(flag: str, kept: int, before: int, why: str = "") -> str:
    """``--task X: kept 60 of 395 items; dropped 335 …``."""
    return f"selection: {flag}: kept {kept} of {before} item(s); dropped {before - kept}{why}"


def by_track(items: Iterable[Item]) -> str:
    """``capability 300, specialty 12``: what a filter dropped, by track."""
    counts = Counter(item.track for item in items)
    return ", ".join(f"{track} {n}" for track, n in sorted(counts.items()))


def domain_drop_reasons(dropped: Sequence[Item]) -> str:
    """Why ``--domain`` dropped items: no domain at all (reference items never have one), or another."""
    without = [i for i in dropped if i.domain is None]
    other = len(dropped) - len(without)
    no_domain = f"{len(without)} with no domain ({by_track(without)}), which --domain never selects"
    if without and other:
        return f": {no_domain}, and {other} of other domains"
    return f" with no domain ({by_track(without)}), which --domain never selects" if without else " of other domains"


def names_hint(names: Iterable[str], what: str) -> str:
    shown = sorted(names)
    more = f", … ({len(shown) - MAX_NAMES_SHOWN} more)" if len(shown) > MAX_NAMES_SHOWN else ""
    return f"{what} in the data: {', '.join(shown[:MAX_NAMES_SHOWN])}{more}" if shown else f"no {what} in the data"


def _shown(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def count_view(items: Sequence[Any], models: Sequence[str], notes: Sequence[str], skipped: int) -> dict[str, Any]:
    """What ``--count`` reports: items and units (items × models) in all and per track and task."""
    tracks: dict[str, dict[str, Any]] = {}
    for item in items:
        entry = tracks.setdefault(item.track, {"items": 0, "units": 0, "tasks": {}})
        entry["items"] += 1
        entry["units"] += len(models)
        entry["tasks"][item.task] = entry["tasks"].get(item.task, 0) + 1
    return {
        "models": list(models),
        "items": len(items),
        "units": len(items) * len(models),
        "by_track": dict(sorted(tracks.items())),
        "skipped_items": skipped,
        "selection_notes": list(notes),
    }


def count_text(view: Mapping[str, Any]) -> str:
    """``--count`` as text: the total, then each track and its tasks with their items and units."""
    n_models = len(view["models"])
    table: list[tuple[str, int, int]] = []
    for track, entry in view["by_track"].items():
        table.append((track, entry["items"], entry["units"]))
        table += [(f"  {task}", n, n * n_models) for task, n in sorted(entry["tasks"].items())]
    width = max([len(name) for name, _, _ in table] + [len("track / task")])
    lines = [
        f"{view['items']} item(s) × {n_models} model(s) = {view['units']} unit(s)"
        f"  (models: {', '.join(view['models'])})",
        f"  {'track / task':<{width}}  {'items':>6}  {'units':>7}",
    ]
    lines += [f"  {name:<{width}}  {items:>6}  {units:>7}" for name, items, units in table]
    if view["skipped_items"]:
        lines.append(
            f"({view['skipped_items']} loaded item(s) are not scorable and never sent; "
            "`python -m eval.datasets` lists why)"
        )
    return "\n".join(lines)
