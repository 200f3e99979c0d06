"""What a freshness audit is asked to do (:class:`FreshnessSpec`), the inputs it reads (:func:`prepare`), and
the ``--dry-run`` view of them (:func:`describe`): points, calls, tokens and cost, before any request.

The stored options of an audit (``data``, ``pool``, ``domains``, ``max_points``; paths made absolute) are
what a ``--resume`` keeps: a resume may repeat them, never change them (:func:`resume_options`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from judge.contracts.table import contract_spec, prompt_version
from pool.config import Model, PoolConfig, PoolConfigError, load_pool
from pool.execute.budget import call_cost
from pool.freshness.points import GoldPoint, domain_groups, gold_points, points_fingerprint
from pool.items_source import DataError, load_run_items
from runners.protocols.ollama import TEMPLATE_TOKENS_PER_MESSAGE, TOKENS_PER_CHAR

CONTRACT = "freshness"
DEFAULT_POOL = "model_pool.yaml"
RUN_ID = "freshness"  # the one run of an audit folder's run store
# The option a flag sets, for messages: a resume names the flag the user gave.
FLAGS = {"data": "--data", "pool": "--pool", "domains": "--domain", "max_points": "--max"}


class AuditInputError(ValueError):
    """The audit cannot start: the message names the file, line or flag and what to do (exit 2)."""


@dataclass(frozen=True)
class FreshnessSpec:
    """An audit as asked (the CLI only turns its arguments into one). ``domains`` empty: every system of
    the data; ``max_points``: the first N points of each domain; ``out``: the audit folder (default
    ``runs/freshness-<UTC time>``)."""

    data: tuple[str, ...] = ()
    pool: str | None = None
    domains: tuple[str, ...] = ()
    max_points: int | None = None
    out: str | None = None
    no_cache: bool = False
    cache_dir: str | None = None
    log_interval: float = 30.0

    def options(self) -> dict[str, Any]:
        """What a new audit stores: the selection, paths absolute (a resume may run from elsewhere)."""
        if not self.data:
            raise AuditInputError("--data: give the suite file(s) or folder(s) whose gold points are audited")
        if self.max_points is not None and self.max_points < 1:
            raise AuditInputError(f"--max must be at least 1, got {self.max_points}")
        return {
            "data": [str(Path(p).expanduser().resolve()) for p in self.data],
            "pool": str(Path(self.pool or DEFAULT_POOL).expanduser().resolve()),
            "domains": list(self.domains),
            "max_points": self.max_points,
        }

    def out_dir(self) -> Path:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        return Path(self.out) if self.out else Path("runs") / f"freshness-{stamp}"


def resume_options(spec: FreshnessSpec, stored: Mapping[str, Any], where: Path) -> dict[str, Any]:
    """The stored options; a selection flag given again must repeat its stored value."""
    given = {
        "data": [str(Path(p).expanduser().resolve()) for p in spec.data] if spec.data else None,
        "pool": str(Path(spec.pool).expanduser().resolve()) if spec.pool else None,
        "domains": list(spec.domains) or None,
        "max_points": spec.max_points,
    }
    for name, value in given.items():
        if value is not None and value != stored.get(name):
            raise AuditInputError(
                f"{FLAGS[name]} {value}: the audit in {where} was started with {stored.get(name)}; a resume keeps "
                f"its options, so leave {FLAGS[name]} out, or start a new audit with --out"
            )
    return {name: stored.get(name) for name in FLAGS}


@dataclass(frozen=True)
class Prepared:
    """An audit's inputs, read and checked: the pool, its judges (a panel in file order) and the points."""

    options: Mapping[str, Any]
    config: PoolConfig
    judges: tuple[Model, ...]
    points: Mapping[str, list[GoldPoint]]  # domain → its de-duplicated points, in suite order
    all_points: list[GoldPoint] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "all_points", [p for points in self.points.values() for p in points])

    def judges_fingerprint(self) -> str:
        """sha256 of every judge's pool entry and backend: a resume with other judges is refused."""
        payload = {
            "judges": [j.model_dump(mode="json", exclude={"notes", "price", "node"}) for j in self.judges],
            "backends": {
                j.backend: self.config.backends[j.backend].model_dump(mode="json", exclude={"api_key_env", "price"})
                for j in self.judges
            },
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()

    def points_fingerprint(self) -> str:
        return points_fingerprint(self.all_points)


def prepare(options: Mapping[str, Any]) -> Prepared:
    """The pool, its judges and the gold points of ``options``; :class:`AuditInputError` saying what is wrong."""
    try:
        config = load_pool(options["pool"])
    except PoolConfigError as exc:
        raise AuditInputError(str(exc)) from None
    judges = config.judge_models()
    if not judges:
        raise AuditInputError(
            f"{options['pool']}: the pool has no judge: or judges: block, and the audit asks a judge; add one "
            "(the shipped model_pool.yaml judges with the local Qwen model)"
        )
    try:
        loaded = load_run_items(list(options["data"]))
        groups = domain_groups(loaded.scorable_items, options["domains"])
    except (DataError, ValueError) as exc:
        raise AuditInputError(str(exc)) from None
    points = {domain: gold_points(domain, items, options["max_points"]) for domain, items in groups.items()}
    points = {domain: found for domain, found in points.items() if found}
    if not points:
        raise AuditInputError(
            f"--data {' '.join(options['data'])}: no item has expected_topics or must_warn, so there is no gold "
            "point to audit; pass a criteria suite such as ../shared/data/book-gold/internists.yaml"
        )
    return Prepared(options, config, judges, points)


def _prompt_tokens_at_most(point: GoldPoint) -> int:
    """The request's prompt at one token per character plus the chat template's tokens per message (the
    bound ``runners.protocols.ollama`` warns with)."""
    messages = contract_spec(CONTRACT).build(point.carrier, point.text)
    chars = sum(len(m["content"]) for m in messages)
    return chars * TOKENS_PER_CHAR + TEMPLATE_TOKENS_PER_MESSAGE * (len(messages) + 1)


def describe(prepared: Prepared) -> dict[str, Any]:
    """The ``--dry-run`` view: what would be asked of whom, and what it may cost (no request sent).

    ``calls``: one verdict per gold point and judge; ``reasks_at_most``: one more per unparseable reply.
    ``cost_at_most`` prices the first asks as if every prompt took one token per character and every
    reply ran to the judge's ``max_tokens`` (re-asks not included); None when a judge has no ``price:``.
    Verdicts already in the response cache cost nothing and are not subtracted here.
    """
    points = prepared.all_points
    prompt = sum(_prompt_tokens_at_most(p) for p in points)
    judges, costs = [], []
    for judge in prepared.judges:
        price = prepared.config.price_of(judge)
        cost = call_cost(price, prompt, len(points) * judge.max_tokens)
        costs.append(cost)
        judges.append(
            {
                "name": judge.name,
                "backend": judge.backend,
                "model": judge.model,
                "calls": len(points),
                "prompt_tokens_at_most": prompt,
                "completion_tokens_at_most": len(points) * judge.max_tokens,
                "cost_at_most": None if cost is None else round(cost, 6),
            }
        )
    calls = len(points) * len(prepared.judges)
    return {
        "data": list(prepared.options["data"]),
        "pool": prepared.options["pool"],
        "contract": {"name": CONTRACT, "prompt_version": prompt_version(CONTRACT)},
        "domains": {domain: len(found) for domain, found in prepared.points.items()},
        "points": len(points),
        "judges": judges,
        "combined_by": "majority" if len(prepared.judges) > 1 else None,
        "calls": calls,
        "reasks_at_most": calls,
        "requests_at_most": 2 * calls,
        "cost_at_most": None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 6),
        "unpriced": [j.name for j, c in zip(prepared.judges, costs, strict=True) if c is None],
    }
