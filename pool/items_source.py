"""Which items a run sends: loaded from ``--data`` (or the built-in demo suite), then filtered.

Orchestration tracks first: without ``--orchestration`` the ``orchestration``-track items
(routing, tool decision, probes) are left out, unless ``--track`` names them (``orchestration``,
``probe``, ``tool_decision``); with it they are kept and a specialty-routing item is derived from
every criteria item with a domain (``eval.items.orchestration``). Then the filters, in this documented
order: ``--subset`` (``mini``/``medium``/``large``, see ``eval.subsets``, or a YAML/JSON/text file
of item ids such as ``hard.yaml``), ``--track`` (a track or an alias, see ``pool.selection``),
``--task``, ``--domain`` (exact ``system:topic`` or a ``system`` prefix), ``--id``, ``--sample N``
(first N per (task, domain), in load order), then ``--limit N`` (first N of what is left). Track,
task, domain and id take comma lists. Only scorable items are sent; unscorable ones (e.g. probes
not yet verified) are reported as skipped by the loader. ``--answer-unlabelled`` also sends the
unscorable items a loader marks answer-only (``meta["unlabelled"]``: CHIP test-set cases), whose
answers are stored and scored ``unscorable``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from eval.items import Item
from eval.items.orchestration import derive_routing_items
from eval.loaders import DuplicateItemError, ItemFormatError, LoadResult, load_demo_suite, load_items
from eval.loaders.formats.chip import ANSWER_ONLY_META
from eval.subsets import SUBSET_SIZES, TierError, select_tier
from pool.selection import (
    ORCHESTRATION,
    SelectionError,
    by_track,
    domain_drop_reasons,
    domain_matches,
    kept_note,
    names_hint,
    names_orchestration_items,
    split_values,
    task_matches,
    task_names,
    track_matcher,
    unmatched,
)


class DataError(ValueError):
    """The data named for a run cannot be used; the message says which file and why."""


def load_run_items(paths: Sequence[str] | None) -> LoadResult:
    """Items from files/folders, or the built-in demo suite when no path is given."""
    try:
        if not paths:
            return load_demo_suite()
        missing = [p for p in paths if not Path(p).exists()]
        if missing:
            raise DataError(f"--data: no such file or folder: {', '.join(missing)}")
        return load_items([Path(p) for p in paths])
    except (ItemFormatError, DuplicateItemError) as exc:
        raise DataError(str(exc)) from exc


def select_items(loaded: LoadResult, options: Mapping[str, Any], notes: list[str] | None = None) -> list[Item]:
    """Apply the run's filters (see module docstring) to the scorable items.

    Every step that drops items appends to ``notes`` (when given) how many it kept and why the
    rest went, for the run to print on stderr. Raises :class:`DataError` naming the data and the
    filter that left nothing, rather than starting a run of zero items.
    """
    said: list[str] = notes if notes is not None else []
    items = list(loaded.scorable_items)
    if options.get("answer_unlabelled"):  # answer-only units too: answered and stored, scored unscorable
        items = [i for i in loaded.items if i.scorable or i.meta.get(ANSWER_ONLY_META) is True]
    if not items:
        raise DataError(_nothing_loaded(loaded, options))
    try:
        named_orchestration = names_orchestration_items(options.get("track"))
        if options.get("orchestration"):
            items += derive_routing_items(items)
        elif not named_orchestration:
            before = len(items)
            items = [i for i in items if i.track != ORCHESTRATION]
            if not items:
                raise DataError(
                    f"{_data_name(options)}: every scorable item is on the orchestration track; pass --orchestration"
                )
            if len(items) < before:
                said.append(
                    kept_note(
                        "without --orchestration",
                        len(items),
                        before,
                        " orchestration-track item(s) (probes, tool decisions, routing); "
                        "add --orchestration, or --track probe / tool_decision, to send them",
                    )
                )
        if options.get("subset"):
            if options.get("sample") is not None:
                said.append(
                    f"warning: --subset {options['subset']} with --sample {options['sample']}: both apply, "
                    f"the subset first, then the first {options['sample']} per (task, domain) of the subset"
                )
            before = len(items)
            items = _apply_subset(items, options["subset"], said)
            if len(items) < before:
                said.append(kept_note(f"--subset {options['subset']}", len(items), before, " outside the subset"))
        for name, keep, why in _filters(options, loaded):
            before_items = items
            items = [i for i in items if keep(i)]
            if not items:
                raise DataError(
                    f"{_data_name(options)}: --{name} {_shown(options[name])} matches none of the "
                    f"{len(before_items)} item(s) left by the earlier filters; check its spelling against "
                    "`python -m eval.datasets`"
                )
            if len(items) < len(before_items):
                kept_ids = {i.id for i in items}
                said.append(
                    kept_note(
                        f"--{name} {_shown(options[name])}",
                        len(items),
                        len(before_items),
                        why([i for i in before_items if i.id not in kept_ids]),
                    )
                )
            said.extend(_partial_misses(name, options[name], before_items, loaded))
        if options.get("id"):
            known = {i.id for i in loaded.items}
            wanted = split_values(options["id"], known)
            unknown = [i for i in wanted if i not in known]
            if unknown:
                raise DataError(f"--id: no such item: {', '.join(unknown)}")
            before = len(items)
            keep = set(wanted)
            items = [i for i in items if i.id in keep]
            if not items:
                raise DataError(f"--id {_shown(options['id'])}: those items exist but other filters removed them")
            if len(items) < len(wanted):
                said.append(
                    f"warning: --id: {len(wanted) - len(items)} of the {len(wanted)} named item(s) were "
                    "removed by the other filters (or are not scorable)"
                )
            if len(items) < before:
                said.append(kept_note("--id", len(items), before, " not named"))
    except SelectionError as exc:
        raise DataError(str(exc)) from None
    if options.get("sample") is not None:
        if options["sample"] < 1:
            raise DataError(f"--sample must be >= 1, got {options['sample']}")
        per_bucket: dict[tuple[str, str | None], int] = {}
        sampled = []
        for item in items:
            bucket = (item.task, item.domain)
            if per_bucket.get(bucket, 0) < options["sample"]:
                per_bucket[bucket] = per_bucket.get(bucket, 0) + 1
                sampled.append(item)
        if len(sampled) < len(items):
            said.append(
                kept_note(
                    f"--sample {options['sample']}",
                    len(sampled),
                    len(items),
                    f" beyond the first {options['sample']} of each of {len(per_bucket)} (task, domain) bucket(s)",
                )
            )
        items = sampled
    if options.get("limit") is not None:
        if options["limit"] < 1:
            raise DataError(f"--limit must be >= 1, got {options['limit']}")
        if len(items) > options["limit"]:
            said.append(
                kept_note(
                    f"--limit {options['limit']}", options["limit"], len(items), f" after the first {options['limit']}"
                )
            )
        items = items[: options["limit"]]
    return items


def _filters(options: Mapping[str, Any], loaded: LoadResult) -> list[tuple[str, Any, Any]]:
    """(flag, keep, why-dropped) for --track, --task and --domain, in that order, for those given."""
    wanted: list[tuple[str, Any, Any]] = []
    if options.get("track"):
        wanted.append(
            ("track", track_matcher(options["track"]), lambda dropped: f" not selected (by track: {by_track(dropped)})")
        )
    if options.get("task"):
        tasks = set(split_values(options["task"], task_names(loaded.items)))
        wanted.append(("task", lambda i: task_matches(i, tasks), lambda dropped: " of other tasks"))
    if options.get("domain"):
        domains = split_values(options["domain"])
        wanted.append(("domain", lambda i: any(domain_matches(i.domain, d) for d in domains), domain_drop_reasons))
    return wanted


def _partial_misses(name: str, value: Any, candidates: Sequence[Item], loaded: LoadResult) -> list[str]:
    """A warning for each value of a list that matched none of the items it was applied to."""
    if name == "task":
        values = split_values(value, task_names(loaded.items))
        missed = unmatched(values, candidates, lambda item, v: task_matches(item, {v}))
        hint = names_hint({i.task for i in candidates}, "tasks")
    elif name == "domain":
        missed = unmatched(split_values(value), candidates, lambda item, v: domain_matches(item.domain, v))
        hint = names_hint({i.domain.split(":", 1)[0] for i in candidates if i.domain}, "systems")
    else:
        return []
    return [
        f"warning: --{name} {v}: matches no item left by the earlier filters ({hint}); "
        "check its spelling against `python -m eval.datasets`"
        for v in missed
    ]


def _shown(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _data_name(options: Mapping[str, Any]) -> str:
    return "--data " + " ".join(options["data"]) if options.get("data") else "the built-in demo suite"


def _nothing_loaded(loaded: LoadResult, options: Mapping[str, Any]) -> str:
    reasons = "; ".join(f"{skipped.source}: {skipped.reason}" for skipped in loaded.skipped[:3])
    found = f"{len(loaded.items)} item(s) found, none scorable" if loaded.items else "no items found"
    more = f" ({reasons})" if reasons else ""
    return (
        f"{_data_name(options)}: {found}{more}; pass files or folders of JSONL/JSON items in a supported format "
        "(see docs/pool-file.md, 'Item files')"
    )


def read_named_file(path: Path, flag: str, fix: str = "") -> str:
    """The UTF-8 text of a file the command line named with ``flag``; one :class:`DataError` naming the
    flag and the file when it is not UTF-8 or cannot be read (``fix``: what to do then, if anything)."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"{flag} {path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise DataError(f"{flag} {path}: cannot read it ({exc.strerror}){f'; {fix}' if fix else ''}") from None


def read_id_list(path: Path) -> list[str]:
    """Item ids from ``hard.yaml`` (``item_ids:``), a YAML/JSON list, or a text file (one id a line)."""
    text = read_named_file(path, "--subset")
    if path.suffix in (".yaml", ".yml", ".json"):
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise DataError(f"--subset {path}: not valid YAML/JSON ({exc})") from None
        ids = data.get("item_ids") if isinstance(data, dict) else data
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise DataError(f"--subset {path}: expected a list of item ids or a mapping with item_ids: [...]")
        return ids
    return [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]


def _apply_subset(items: list[Item], subset: str, said: list[str]) -> list[Item]:
    """A tier (``mini``/``medium``/``large``: ``./subsets/<name>.yaml`` as frozen by ``python -m
    eval.subsets``, else computed now — see ``eval.subsets.select``) or a file of item ids. The
    tier's warnings (no frozen file, a changed gold, ids gone) join the selection's notes."""
    if subset in SUBSET_SIZES:
        try:
            selection = select_tier(items, subset)
        except TierError as exc:
            raise DataError(str(exc)) from None
        said.extend(f"warning: {note}" for note in selection.notes)
        return selection.items
    path = Path(subset)
    if not path.is_file():
        raise DataError(f"--subset {subset}: neither {', '.join(SUBSET_SIZES)} nor a file of item ids")
    wanted = read_id_list(path)
    known = {i.id for i in items}
    missing = [i for i in wanted if i not in known]
    if missing:
        raise DataError(f"--subset {path}: {len(missing)} id(s) are not in the selected data, e.g. {missing[0]}")
    if not wanted:
        raise DataError(
            f"--subset {path}: lists no item ids; pass a file with at least one id (e.g. hard.yaml from routing.build)"
        )
    keep = set(wanted)
    return [i for i in items if i.id in keep]
