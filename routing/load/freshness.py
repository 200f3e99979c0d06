"""A gold freshness audit (``freshness.json``, written by ``python -m pool.freshness``), read for a build: which
gold points a judge found ``drifted`` and which items carry them.

A build reads ``--freshness FILE``, else ``freshness.json`` in the first run folder (a run whose pool file
names an audit copies it there). Only ``drifted`` points matter here: their items are marked "gold may be
stale" in ``leaderboard.md`` and ``report.html``, and stay in every statistic — a person decides.
Errors name ``path: field``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routing.load.rows import LoadError

KIND = "medpool-freshness-audit"
SCHEMA_VERSIONS = (1,)
AUDIT_FILENAME = "freshness.json"


@dataclass(frozen=True)
class DriftedPoint:
    """One gold point the audit found drifted, with the items that carry it."""

    domain: str
    text: str
    current_guideline: str
    note: str
    item_ids: tuple[str, ...]


@dataclass(frozen=True)
class FreshnessAudit:
    """What a build needs of an audit: where it is, when and by whom it was made, its drifted points."""

    path: str
    generated_at: str
    judges: tuple[str, ...]
    points: int
    drifted: tuple[DriftedPoint, ...]

    def drifted_by_item(self) -> dict[str, list[DriftedPoint]]:
        """Item id → the drifted points it carries."""
        out: dict[str, list[DriftedPoint]] = {}
        for point in self.drifted:
            for item_id in point.item_ids:
                out.setdefault(item_id, []).append(point)
        return out


def _field(document: Any, path: Path, *keys: str) -> Any:
    value = document
    for depth, key in enumerate(keys):
        if not isinstance(value, dict) or key not in value:
            raise LoadError(
                f"{path}: {'.'.join(keys[: depth + 1])}: missing; pass a freshness.json that python -m pool.freshness "
                "wrote"
            )
        value = value[key]
    return value


def read_freshness(path: Path | str) -> FreshnessAudit:
    """The audit in ``path``; :class:`LoadError` naming the file and field when it cannot be used."""
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise LoadError(f"{path}: cannot read the freshness audit ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise LoadError(f"{path}: the freshness audit is not JSON ({exc})") from None
    if _field(document, path, "kind") != KIND or _field(document, path, "schema_version") not in SCHEMA_VERSIONS:
        raise LoadError(
            f"{path}: kind/schema_version: not a {KIND} file of version {SCHEMA_VERSIONS}; pass the freshness.json "
            "that python -m pool.freshness wrote"
        )
    drifted, total = [], 0
    domains = _field(document, path, "domains")
    if not isinstance(domains, dict):
        raise LoadError(f"{path}: domains: must be an object of domains")
    for domain in domains:
        points = _field(document, path, "domains", domain, "points")
        if not isinstance(points, list):
            raise LoadError(f"{path}: domains.{domain}.points: must be a list")
        total += len(points)
        for index, point in enumerate(points):
            where = f"{path}: domains.{domain}.points[{index}]"
            if not isinstance(point, dict) or not isinstance(point.get("item_ids"), list):
                raise LoadError(f"{where}: needs a verdict and a list of item_ids")
            if point.get("verdict") == "drifted":
                drifted.append(
                    DriftedPoint(
                        domain,
                        str(point.get("text", "")),
                        str(point.get("current_guideline", "unknown")),
                        str(point.get("note", "")),
                        tuple(str(i) for i in point["item_ids"]),
                    )
                )
    judges = tuple(str(j.get("name")) for j in document.get("judges", []) if isinstance(j, dict))
    return FreshnessAudit(str(path), str(document.get("generated_at", "")), judges, total, tuple(drifted))


def find_freshness(run_dirs: list[Path | str], given: Path | str | None) -> FreshnessAudit | None:
    """``given`` read, else the first run folder's ``freshness.json`` when it has one, else None."""
    if given is not None:
        return read_freshness(given)
    copied = Path(run_dirs[0]) / AUDIT_FILENAME if run_dirs else None
    return read_freshness(copied) if copied is not None and copied.is_file() else None
