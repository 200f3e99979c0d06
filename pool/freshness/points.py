"""The gold points a freshness audit asks about: every ``expected_topics`` and ``must_warn`` entry of a
domain's criteria items, de-duplicated, with the ``source_refs`` and item ids that carry each.

A point's identity is its normalised text (NFKC, case folded, runs of white space as one space,
trailing punctuation dropped), so "限酒" and "限酒。" are one point; its shown text is the first
spelling met, in suite order. Its id, ``<domain>/<12 hex of sha256(normalised text)>``, is stable
across nights and machines: a resumed audit finds the verdicts it already has by it.

Domains. ``--domain D`` takes the items whose ``domain`` is ``D`` (``cardiology:hypertension``) or,
for a name without ``:``, whose system is ``D`` (``cardiology``: every ``cardiology:*`` item), as
the med-agent-verifier README's ``freshness_audit.sh --domain cardiology`` does. Without
``--domain`` every system is audited on its own, and items without a domain form ``(none)``.
``max_points`` keeps the first N points of each domain.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from eval.items import Item

GOLD_POINT_KEYS = ("expected_topics", "must_warn")
NO_DOMAIN = "(none)"
_SPACES = re.compile(r"\s+")
_TRAILING = "。.；;，,、！!？?：: "


def normalised(text: str) -> str:
    """The text a point is de-duplicated by (module doc)."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold().rstrip(_TRAILING)


@dataclass(frozen=True)
class GoldPoint:
    """One de-duplicated gold point of a domain; ``carrier`` is the first item carrying it, with every
    ``source_refs`` of the point, so the judge sees the point with its question and sources."""

    id: str
    domain: str
    text: str
    kinds: tuple[str, ...]  # the gold lists it was found in: expected_topics, must_warn
    source_refs: tuple[str, ...]
    item_ids: tuple[str, ...]
    carrier: Item

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "text": self.text,
            "kinds": list(self.kinds),
            "source_refs": list(self.source_refs),
            "item_ids": list(self.item_ids),
        }


def _system(item: Item) -> str:
    return item.domain.split(":", 1)[0] if item.domain else NO_DOMAIN


def _in_domain(item: Item, domain: str) -> bool:
    if ":" in domain:
        return item.domain == domain
    return _system(item) == domain


def criteria_items(items: Sequence[Item]) -> list[Item]:
    """The items that carry gold points (a mapping gold with ``expected_topics`` or ``must_warn``)."""
    return [i for i in items if hasattr(i.gold, "get") and any(i.gold.get(k) for k in GOLD_POINT_KEYS)]


def domain_groups(items: Sequence[Item], domains: Sequence[str]) -> dict[str, list[Item]]:
    """The items of each audited domain, in suite order (module doc); ValueError for a domain with none."""
    carrying = criteria_items(items)
    if not domains:
        groups: dict[str, list[Item]] = {}
        for item in carrying:
            groups.setdefault(_system(item), []).append(item)
        return groups
    out: dict[str, list[Item]] = {}
    for domain in dict.fromkeys(domains):
        chosen = [item for item in carrying if _in_domain(item, domain)]
        if not chosen:
            known = sorted({_system(i) for i in carrying} | {i.domain for i in carrying if i.domain})
            hint = difflib.get_close_matches(domain, known, n=1)
            raise ValueError(
                f"--domain {domain}: no item with expected_topics or must_warn has this domain or system"
                + (f" (did you mean {hint[0]!r}?)" if hint else "")
                + f"; the data has: {', '.join(known[:12])}{' …' if len(known) > 12 else ''}"
            )
        out[domain] = chosen
    return out


@dataclass
class _Found:
    """A point while the items are read: its first spelling and carrier, and what it gathers."""

    text: str
    carrier: Item
    kinds: dict[str, None] = field(default_factory=dict)  # dicts as ordered sets: suite order kept
    refs: dict[str, None] = field(default_factory=dict)
    item_ids: dict[str, None] = field(default_factory=dict)


def gold_points(domain: str, items: Sequence[Item], max_points: int | None = None) -> list[GoldPoint]:
    """The de-duplicated gold points of ``items`` (one domain), in suite order, at most ``max_points``."""
    found: dict[str, _Found] = {}
    for item in items:
        for kind in GOLD_POINT_KEYS:
            for text in item.gold.get(kind) or ():
                key = normalised(text)
                if not key:
                    continue
                entry = found.setdefault(key, _Found(text, item))
                entry.kinds[kind] = None
                entry.item_ids[item.id] = None
                entry.refs.update(dict.fromkeys(item.gold.get("source_refs") or ()))
    return [
        GoldPoint(
            id=f"{domain}/{hashlib.sha256(key.encode('utf-8')).hexdigest()[:12]}",
            domain=domain,
            text=entry.text,
            kinds=tuple(k for k in GOLD_POINT_KEYS if k in entry.kinds),
            source_refs=tuple(entry.refs),
            item_ids=tuple(entry.item_ids),
            carrier=replace(entry.carrier, gold={**entry.carrier.gold, "source_refs": tuple(entry.refs)}),
        )
        for key, entry in list(found.items())[:max_points]
    ]


def points_fingerprint(points: Sequence[GoldPoint]) -> str:
    """sha256 of what the audit asks about (ids, texts, sources, item ids, questions): a resume of an
    audit whose points changed is refused."""
    blob = json.dumps(
        [{**p.to_json(), "question": p.carrier.question, "domain_of_carrier": p.carrier.domain} for p in points],
        ensure_ascii=False,
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
