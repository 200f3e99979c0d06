"""The static checks on the suites: they load, the registries cover them, and items round-trip.

None of these sends a request. Registry coverage is asked of the same tables a run uses
(``eval.scorers.SCORERS`` by gold type, ``judge.contracts.table.CONTRACT_SPECS`` by judge
contract), so the gate and the run cannot disagree; the round trip writes every item in medpool's own JSONL format
and loads it back through ``eval.loaders``, because a run's plan, subsets and decision
recognition all re-read items that way.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from pathlib import Path

from eval.gold_types import GOLD_TYPE_SPECS
from eval.items import Item
from eval.items.orchestration import derive_routing_items
from eval.loaders import ItemFormatError, LoadResult, load_items
from eval.scorers import SCORERS, missing_scorer_message
from judge.contracts.table import CONTRACT_SPECS
from pool.check.outcome import Outcome, counted, failed, passed
from pool.items_source import DataError, load_run_items

ROUND_TRIP_FILE = "round-trip.jsonl"


def _suites_name(data: Sequence[Path] | None) -> str:
    return "--data " + " ".join(map(str, data)) if data else "the built-in demo suite"


def load_outcome(data: Sequence[Path] | None) -> tuple[LoadResult | None, Outcome]:
    """Load the suites as a run would (``pool.items_source``); count items per track and gold type,
    and group the skipped ones by reason."""
    name = _suites_name(data)
    try:
        loaded = load_run_items([str(p) for p in data] if data else None)
    except DataError as exc:
        return None, failed(
            "suites",
            f"{name} does not load: {exc}",
            "fix the file at the place named (or declare its format, or skip it, in a "
            "medpool-suite.yaml beside it), then check again",
        )
    scorable = loaded.scorable_items
    reasons = Counter(skipped.reason for skipped in loaded.skipped)
    example = {skipped.reason: skipped.source for skipped in reversed(loaded.skipped)}
    details = [f"gold types: {counted(Counter(i.gold_type for i in scorable))}"] if scorable else []
    details += [f"skipped {n}× {reason} (e.g. {example[reason]})" for reason, n in reasons.most_common()]
    summary = (
        f"{name}: {len(loaded.items)} items, {len(scorable)} scorable "
        f"({counted(Counter(i.track for i in scorable)) or 'none'}), {len(loaded.skipped)} skipped"
    )
    if not scorable:
        return loaded, failed(
            "suites",
            summary,
            "a run needs scorable items: pass files or folders of items in a "
            "supported format (docs/pool-file.md, 'Item files')",
            details,
        )
    return loaded, passed("suites", summary, details)


def registry_outcome(
    items: Sequence[Item] | None,
    scorers: Mapping[str, object] = SCORERS,
    contracts: Mapping[str, object] = CONTRACT_SPECS,
) -> Outcome:
    """Every gold type (and so every task) a run of ``items`` can send — ``--orchestration``'s derived
    specialty-routing items included — has a scorer, and every judged one a judge contract."""
    if items is None:
        return Outcome("registry", "SKIP", "no suites loaded")
    every = [*items, *derive_routing_items([i for i in items if i.scorable])]
    tasks: dict[str, set[str]] = {}
    first: dict[str, Item] = {}
    for item in every:
        tasks.setdefault(item.gold_type, set()).add(item.task)
        first.setdefault(item.gold_type, item)
    problems = [
        f"{first[t].source}: task {', '.join(sorted(tasks[t]))}: {missing_scorer_message(t)}"
        for t in sorted(tasks)
        if t not in scorers
    ]
    judged = sorted(t for t in tasks if GOLD_TYPE_SPECS[t].judged)
    for gold_type in judged:
        contract = GOLD_TYPE_SPECS[gold_type].judge_contract
        if contract not in contracts:
            problems.append(
                f"gold type {gold_type!r} is judged under contract {contract!r}, which judge/contracts/ does not "
                f"declare (it has {', '.join(sorted(contracts))}); add judge/contracts/{contract}.py"
            )
    task_count = len({task for names in tasks.values() for task in names})
    if problems:
        return failed(
            "registry",
            f"{len(problems)} gap(s) in the scorer and judge-contract registries",
            "register what is named below (eval/scorers/, judge/contracts/); a run would refuse these items",
            problems,
        )
    contracts_used = ", ".join(f"{t}→{GOLD_TYPE_SPECS[t].judge_contract}" for t in judged) or "none judged"
    return passed(
        "registry",
        f"{task_count} tasks of {len(tasks)} gold types all have a scorer; judge contracts: {contracts_used}",
    )


def round_trip_outcome(items: Sequence[Item] | None) -> Outcome:
    """Every item → ``to_record`` → a JSONL file → ``load_items`` → the same item (its source aside)."""
    if items is None:
        return Outcome("round trip", "SKIP", "no suites loaded")
    with tempfile.TemporaryDirectory(prefix="medpool-check-") as folder:
        path = Path(folder) / ROUND_TRIP_FILE
        path.write_text(
            "".join(json.dumps(item.to_record(), ensure_ascii=False) + "\n" for item in items), encoding="utf-8"
        )
        try:
            again = {item.id: item for item in load_items([path]).items}
        except ItemFormatError as exc:
            problem = str(exc).replace(str(path), ROUND_TRIP_FILE)
            return failed(
                "round trip",
                "items written with to_record do not load again",
                "make eval/items/item.py's to_record and eval/loaders/formats/medpool_jsonl.py agree",
                [problem],
            )
    problems = []
    for item in items:
        twin = again.get(item.id)
        if twin is None:
            problems.append(f"{item.source}: item {item.id}: not loaded back")
        elif replace(twin, source=item.source) != item:
            changed = [
                f.name for f in fields(Item) if f.name != "source" and getattr(twin, f.name) != getattr(item, f.name)
            ]
            problems.append(f"{item.source}: item {item.id}: {', '.join(changed)} changed on the way")
    if problems:
        return failed(
            "round trip",
            f"{len(problems)} of {len(items)} items change when written and read back",
            "make eval/items/item.py's to_record and eval/loaders/formats/medpool_jsonl.py agree on the fields named",
            problems,
        )
    return passed("round trip", f"{len(items)} items written with to_record load back equal")
