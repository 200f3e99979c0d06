"""``shortlist.yaml``: the screen's result as a file ``pool.run --from-shortlist`` and ``routing.scenario`` read.

Schema (``schema_version: 1``)::

    kind: medpool-shortlist
    schema_version: 1
    generated_at: 2026-01-05T02:00:00Z
    domain: cardiology            # null: not asked
    axis: specialty               # null: not asked
    formula: default              # or toward_prior
    weights: {...}                # every weight the scores used
    evidence: [docs/examples/evidence/a.md, ...]
    tiers: {must-test: [names], optional: [names], skip: [names]}
    candidates:                   # best score first
      - {model, tier, score, family, size_b, testable: true,
         evidence: {source, title, champion, rank, axis, relevance, proximity, champion_score} or null,
         why: [lines]}
    ceilings:                     # strong champions the pool cannot run
      - {model, testable: false, family, size_b, rank, axis, license, champion_score, relevance,
         published_score, source, title}

:func:`read_shortlist` checks what its readers use and refuses the rest with ``file: field`` and what to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from routing.screen.formula import MUST_TEST, OPTIONAL, TIERS
from routing.screen.score import Champion, Screen, Screened

KIND = "medpool-shortlist"
SCHEMA_VERSION = 1


class ShortlistError(ValueError):
    """A shortlist file its reader cannot use; the message names file: field and what to do."""


def _round(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def _candidate(s: Screened) -> dict[str, Any]:
    evidence = None
    if s.best is not None:
        c = s.best.champion
        evidence = {
            "source": str(c.entry.path),
            "title": c.entry.title,
            "champion": c.row.model,
            "rank": c.row.rank,
            "axis": c.row.axis,
            "relevance": _round(c.relevance),
            "proximity": _round(s.best.proximity),
            "champion_score": _round(c.score),
        }
    return {
        "model": s.name,
        "tier": s.tier,
        "score": _round(s.score),
        "family": s.family,
        "size_b": s.size_b,
        "testable": True,
        "evidence": evidence,
        "why": list(s.why),
    }


def _ceiling(c: Champion) -> dict[str, Any]:
    return {
        "model": c.row.model,
        "testable": False,
        "family": c.family,
        "size_b": c.size_b,
        "rank": c.row.rank,
        "axis": c.row.axis,
        "license": c.row.license,
        "champion_score": _round(c.score),
        "relevance": _round(c.relevance),
        "published_score": c.row.published,
        "source": str(c.entry.path),
        "title": c.entry.title,
    }


def shortlist_document(screen: Screen, generated_at: str | None = None) -> dict[str, Any]:
    """The shortlist as plain data (module docstring)."""
    tiers: dict[str, list[str]] = {tier: [] for tier in TIERS}
    for s in screen.candidates:
        tiers[s.tier].append(s.name)
    return {
        "kind": KIND,
        "schema_version": SCHEMA_VERSION,
        "generated_at": generated_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "domain": screen.domain,
        "axis": screen.axis,
        "formula": "toward_prior" if screen.toward_prior else "default",
        "weights": screen.weights.as_dict(),
        "families": list(screen.families),
        "evidence": [str(e.path) for e in screen.entries],
        "tiers": tiers,
        "candidates": [_candidate(s) for s in screen.candidates],
        "ceilings": [_ceiling(c) for c in screen.ceilings],
    }


def dump_shortlist(document: Mapping[str, Any]) -> str:
    return yaml.safe_dump(dict(document), allow_unicode=True, sort_keys=False, width=120)


@dataclass(frozen=True)
class Ceiling:
    model: str
    published_score: float | None
    title: str
    source: str


@dataclass(frozen=True)
class Shortlist:
    """What readers take from a shortlist file: the question, the tiers, the theory scores, the ceilings."""

    path: Path
    domain: str | None
    axis: str | None
    tiers: Mapping[str, tuple[str, ...]]
    scores: Mapping[str, float]  # candidate -> theory score
    ceilings: tuple[Ceiling, ...]

    def models(self, tier: str = MUST_TEST) -> tuple[str, ...]:
        """The must-test models, or with ``tier="optional"`` the must-test and the optional ones."""
        if tier not in (MUST_TEST, OPTIONAL):
            raise ValueError(f"tier: {tier!r}; use {MUST_TEST} or {OPTIONAL}")
        wanted = (MUST_TEST,) if tier == MUST_TEST else (MUST_TEST, OPTIONAL)
        return tuple(name for t in wanted for name in self.tiers.get(t, ()))


def _names(value: Any, path: Path, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ShortlistError(f"{path}: {field}: must be a list of model names; write the shortlist again")
    return tuple(value)


def read_shortlist(path: Path | str) -> Shortlist:
    """A ``shortlist.yaml`` written by ``python -m routing.screen``, checked."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ShortlistError(f"{path}: cannot read ({exc}); pass the shortlist.yaml routing.screen wrote") from None
    except yaml.YAMLError as exc:
        raise ShortlistError(f"{path}: invalid YAML ({exc}); write it again with python -m routing.screen") from None
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise ShortlistError(f"{path}: kind: not a {KIND} file; pass the shortlist.yaml routing.screen wrote")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ShortlistError(
            f"{path}: schema_version: {data.get('schema_version')!r}, this medpool reads {SCHEMA_VERSION}; "
            "write it again with python -m routing.screen"
        )
    tiers = data.get("tiers")
    if not isinstance(tiers, dict):
        raise ShortlistError(f"{path}: tiers: missing; write it again with python -m routing.screen")
    scores: dict[str, float] = {}
    for i, entry in enumerate(data.get("candidates") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("model"), str):
            raise ShortlistError(
                f"{path}: candidates[{i}].model: missing; write it again with python -m routing.screen"
            )
        score = entry.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise ShortlistError(f"{path}: candidates[{i}].score: must be a number, got {score!r}")
        scores[entry["model"]] = float(score)
    ceilings = []
    for i, entry in enumerate(data.get("ceilings") or []):
        if not isinstance(entry, dict) or not isinstance(entry.get("model"), str):
            raise ShortlistError(f"{path}: ceilings[{i}].model: missing; write it again with python -m routing.screen")
        published = entry.get("published_score")
        if published is not None and (isinstance(published, bool) or not isinstance(published, (int, float))):
            raise ShortlistError(f"{path}: ceilings[{i}].published_score: must be a number or null")
        ceilings.append(
            Ceiling(entry["model"], published, str(entry.get("title") or ""), str(entry.get("source") or ""))
        )
    return Shortlist(
        path=path,
        domain=data.get("domain"),
        axis=data.get("axis"),
        tiers={tier: _names(tiers.get(tier), path, f"tiers.{tier}") for tier in TIERS},
        scores=scores,
        ceilings=tuple(ceilings),
    )
