"""The item model and what is built on it, the first room of ``eval``.

- ``item``: ``Item``, one immutable record per question whatever file it came from, with
  ``Source`` (path:line), ``ItemError`` and the tracks; its gold is checked against
  ``eval.gold_types`` when it is built;
- ``scores``: ``Score``, what scoring produces per (model, item), the judge's identity and the
  metric families;
- ``broad_areas``: the broad clinical areas above the specialty system (内科, 精神科, ...);
- ``orchestration``: the specialty-routing items derived from criteria items (``--orchestration``).

``from eval.items import Item`` is the model's public path; the other modules are imported by name
(``from eval.items.scores import Score``).
"""

from eval.gold_types import GOLD_TYPES
from eval.items.item import CHAT_ROLES, CHECKS, TRACKS, Check, GoldType, Item, ItemError, Source, Track, freeze, thaw

__all__ = [
    "CHAT_ROLES",
    "CHECKS",
    "GOLD_TYPES",
    "TRACKS",
    "Check",
    "GoldType",
    "Item",
    "ItemError",
    "Source",
    "Track",
    "freeze",
    "thaw",
]
