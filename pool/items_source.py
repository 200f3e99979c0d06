"""Which items a run sends: loaded from ``--data`` (or the built-in demo suite), then filtered.

Orchestration tracks first: without ``--orchestration`` the ``orchestration``-track items
(routing, tool decision, probes) are left out; with it they are kept and a specialty-routing item
is derived from every criteria item with a domain (``eval.orchestration``). Then the filters, in
this documented order: ``--subset`` (``mini``/``medium``/``large``, see ``eval.subsets``, or a
YAML/JSON/text file of item ids such as ``hard.yaml``), ``--track``, ``--task``, ``--domain``
(exact ``system:topic`` or a ``system`` prefix), ``--id``, ``--sample N`` (first N per
(task, domain), in load order), then ``--limit N`` (first N of what is left). Only scorable items
are sent; unscorable ones (e.g. probes not yet verified) are reported as skipped by the loader.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from eval.items import Item
from eval.loaders import DuplicateItemError, ItemFormatError, LoadResult, load_demo_suite, load_items
from eval.orchestration import derive_routing_items
from eval.subsets import SUBSET_SIZES, named_subset


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


def _domain_matches(domain: str | None, wanted: str) -> bool:
    if domain is None:
        return False
    return domain == wanted or (":" not in wanted and domain.split(":", 1)[0] == wanted)


def select_items(loaded: LoadResult, options: Mapping[str, Any]) -> list[Item]:
    """Apply the run's filters (see module docstring) to the scorable items.

    Raises :class:`DataError` naming the data and the filter that left nothing, rather than
    starting a run of zero items.
    """
    items = list(loaded.scorable_items)
    if not items:
        raise DataError(_nothing_loaded(loaded, options))
    if options.get("orchestration"):
        items += derive_routing_items(items)
    else:
        items = [i for i in items if i.track != "orchestration"]
        if not items:
            raise DataError(f"{_data_name(options)}: every scorable item is on the orchestration track; pass --orchestration")
    if options.get("subset"):
        items = _apply_subset(items, options["subset"])
    for name, keep in _filters(options):
        before = len(items)
        items = [i for i in items if keep(i)]
        if not items:
            raise DataError(f"{_data_name(options)}: --{name} {_shown(options[name])} matches none of the {before} "
                            "item(s) left by the earlier filters; check its spelling against `python -m eval.datasets`")
    if options.get("id"):
        wanted = set(options["id"])
        unknown = wanted - {i.id for i in loaded.items}
        if unknown:
            raise DataError(f"--id: no such item: {', '.join(sorted(unknown))}")
        items = [i for i in items if i.id in wanted]
        if not items:
            raise DataError(f"--id {_shown(options['id'])}: those items exist but other filters removed them")
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
        items = sampled
    if options.get("limit") is not None:
        if options["limit"] < 1:
            raise DataError(f"--limit must be >= 1, got {options['limit']}")
        items = items[: options["limit"]]
    return items


def _filters(options: Mapping[str, Any]) -> list[tuple[str, Any]]:
    wanted = [("track", lambda i: i.track == options["track"]), ("task", lambda i: i.task == options["task"]),
              ("domain", lambda i: _domain_matches(i.domain, options["domain"]))]
    return [(name, keep) for name, keep in wanted if options.get(name)]


def _shown(value: Any) -> str:
    return ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)


def _data_name(options: Mapping[str, Any]) -> str:
    return "--data " + " ".join(options["data"]) if options.get("data") else "the built-in demo suite"


def _nothing_loaded(loaded: LoadResult, options: Mapping[str, Any]) -> str:
    reasons = "; ".join(f"{skipped.source}: {skipped.reason}" for skipped in loaded.skipped[:3])
    found = f"{len(loaded.items)} item(s) found, none scorable" if loaded.items else "no items found"
    more = f" ({reasons})" if reasons else ""
    return (f"{_data_name(options)}: {found}{more}; pass files or folders of JSONL/JSON items in a supported format "
            "(see docs/pool-file.md, 'Item files')")


def read_id_list(path: Path) -> list[str]:
    """Item ids from ``hard.yaml`` (``item_ids:``), a YAML/JSON list, or a text file (one id a line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"--subset {path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise DataError(f"--subset {path}: cannot read it ({exc.strerror})") from None
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


def _apply_subset(items: list[Item], subset: str) -> list[Item]:
    if subset in SUBSET_SIZES:
        return named_subset(items, subset)
    path = Path(subset)
    if not path.is_file():
        raise DataError(f"--subset {subset}: neither {', '.join(SUBSET_SIZES)} nor a file of item ids")
    wanted = read_id_list(path)
    known = {i.id for i in items}
    missing = [i for i in wanted if i not in known]
    if missing:
        raise DataError(f"--subset {path}: {len(missing)} id(s) are not in the selected data, e.g. {missing[0]}")
    if not wanted:
        raise DataError(f"--subset {path}: lists no item ids; pass a file with at least one id (e.g. hard.yaml from routing.build)")
    keep = set(wanted)
    return [i for i in items if i.id in keep]
