"""A tier applied to a run's items: the frozen file when there is one, else computed now.

``select_tier(items, "mini")`` reads ``subsets/mini.yaml`` (relative to the current folder) and
keeps its ids, in its order. The notes it returns are for the run's log: the file is absent (the
tier is computed in memory with the same code, and the note gives the command that freezes it),
the data's fingerprint differs from the file's (a gold changed since it was written), or some of
its ids are not in the data (they are left out, the rest run). Orchestration items are not ranked
(``eval.subsets.order``): probes and tool decisions go along whole, and a routing item derived from a
criteria item goes along when its source item is in the tier.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from eval.items import Item
from eval.subsets.files import DEFAULT_DIR, TierFileError, data_fingerprint, read_tier, refresh_command, tier_path
from eval.subsets.order import ORCHESTRATION_TRACK, named_subset, tier_candidates, tier_size


class TierError(ValueError):
    """The tier cannot be applied to this data; the message says which file and what to do."""


@dataclass(frozen=True)
class TierSelection:
    """The items to run, in tier order (then the orchestration items), and notes for the log."""

    items: list[Item]
    notes: list[str]
    source: str  # the file read, or "computed in memory"


def _freeze_hint(name: str, folder: Path) -> str:
    command = refresh_command([], str(folder))
    return (f"`{command}` freezes it (add --data with the run's paths; none for the built-in demo suite), "
            f"so that the {name} tier can be diffed and cited")


def select_tier(items: Sequence[Item], name: str, folder: Path = DEFAULT_DIR) -> TierSelection:
    """The tier ``name`` of ``items`` (module docstring); :class:`TierError` when it cannot be applied."""
    tier_size(name)  # an unknown name fails here, naming the tiers
    candidates = tier_candidates(items)
    by_id = {item.id: item for item in candidates}
    path = tier_path(folder, name)
    notes: list[str] = []
    if not path.is_file():
        ids = [item.id for item in named_subset(candidates, name)]
        notes.append(f"--subset {name}: {path} not found, so the tier is computed in memory with the same heuristic; "
                     + _freeze_hint(name, folder))
        source = "computed in memory"
    else:
        try:
            frozen = read_tier(path)
        except TierFileError as exc:
            raise TierError(f"--subset {name}: {exc}") from None
        if frozen.tier != name:
            raise TierError(f"--subset {name}: {path} holds the {frozen.tier!r} tier, not {name!r}; "
                            f"refresh the tier files with `{frozen.refresh}`")
        if data_fingerprint(candidates) != frozen.fingerprint:
            notes.append(f"--subset {name}: the data differs from what {path} was made from (a gold or an item changed "
                         f"since it was written); refresh it with `{frozen.refresh}`")
        missing = [item_id for item_id in frozen.item_ids if item_id not in by_id]
        if not frozen.item_ids:
            raise TierError(f"--subset {name}: {path} lists no item ids; refresh it with `{frozen.refresh}`")
        if len(missing) == len(frozen.item_ids):
            raise TierError(f"--subset {name}: none of the {len(missing)} item ids in {path} is in the selected data "
                            f"(e.g. {missing[0]}); it was made for other data — refresh it with `{frozen.refresh}` "
                            "and this run's --data")
        if missing:
            notes.append(f"--subset {name}: {len(missing)} of the {len(frozen.item_ids)} item ids in {path} are not in "
                         f"the data (e.g. {missing[0]}); running the other {len(frozen.item_ids) - len(missing)}. "
                         f"Refresh it with `{frozen.refresh}`")
        ids = [item_id for item_id in frozen.item_ids if item_id in by_id]
        source = str(path)
    ids = list(dict.fromkeys(ids))
    chosen = set(ids)
    along = [item for item in items if _goes_along(item, chosen)]
    return TierSelection([by_id[item_id] for item_id in ids] + along, notes, source)


def _goes_along(item: Item, chosen: set[str]) -> bool:
    """Orchestration items run whole, except a derived routing item whose source is not in the tier."""
    if item.track != ORCHESTRATION_TRACK:
        return False
    source = item.meta.get("derived_from")
    return source is None or source in chosen
