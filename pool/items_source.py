"""Which items a run sends: loaded from ``--data`` (or the built-in demo suite), then filtered.

Filters apply in this documented order: ``--track``, ``--task``, ``--domain`` (exact
``system:topic`` or a ``system`` prefix), ``--id``, then ``--sample N`` (first N per
(task, domain), in load order), then ``--limit N`` (first N of what is left). Only scorable items
are sent; unscorable ones (e.g. probes not yet verified) are reported as skipped by the loader.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.items import Item
from eval.loaders import DuplicateItemError, ItemFormatError, LoadResult, load_demo_suite, load_items


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
    """Apply the run's filters (see module docstring) to the scorable items."""
    items = list(loaded.scorable_items)
    if options.get("track"):
        items = [i for i in items if i.track == options["track"]]
    if options.get("task"):
        items = [i for i in items if i.task == options["task"]]
    if options.get("domain"):
        items = [i for i in items if _domain_matches(i.domain, options["domain"])]
    if options.get("id"):
        wanted = set(options["id"])
        unknown = wanted - {i.id for i in loaded.items}
        if unknown:
            raise DataError(f"--id: no such item: {', '.join(sorted(unknown))}")
        items = [i for i in items if i.id in wanted]
    if options.get("sample") is not None:
        per_bucket: dict[tuple[str, str | None], int] = {}
        sampled = []
        for item in items:
            bucket = (item.task, item.domain)
            if per_bucket.get(bucket, 0) < options["sample"]:
                per_bucket[bucket] = per_bucket.get(bucket, 0) + 1
                sampled.append(item)
        items = sampled
    if options.get("limit") is not None:
        if options["limit"] < 0:
            raise DataError("--limit must be >= 0")
        items = items[: options["limit"]]
    return items
