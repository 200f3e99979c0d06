"""The pool's assets: the file validates, its keys and model files are there, the judge is declared.

The keys and model files are the run's own preflight (:func:`pool.config.preflight.preflight`)
applied to the selected models and every judge, so the gate fails exactly where a run would stop
with exit 2 — and like it, never prints a key's value.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from eval.gold_types import JUDGED_GOLD_TYPES
from eval.items import Item
from pool.check.outcome import CheckInputError, Outcome, failed, passed
from pool.config import LlamaCppBackend, Model, PoolConfig, PoolConfigError, load_pool
from pool.config.preflight import PreflightError, preflight
from pool.plan import select_models


def pool_outcome(pool: Path, names: Sequence[str] | None) -> tuple[PoolConfig | None, tuple[Model, ...], Outcome]:
    """The validated pool and the models to check (``names``, else every enabled one)."""
    try:
        config = load_pool(pool)
    except PoolConfigError as exc:
        return (
            None,
            (),
            failed(
                "pool",
                f"{pool} does not validate ({len(exc.issues)} problem(s))",
                "fix each line named (every key is in docs/pool-file.md)",
                [str(issue) for issue in exc.issues],
            ),
        )
    try:
        models = select_models(config, names, include_disabled=False)
    except ValueError as exc:
        raise CheckInputError(str(exc)) from None
    if not models:
        return (
            config,
            (),
            failed(
                "pool", f"{pool} validates but enables no model", "set `enabled: true` on a model, or pass --models"
            ),
        )
    backends = sorted({m.backend for m in models})
    return (
        config,
        models,
        passed(
            "pool",
            f"{pool} validates; checking {len(models)} model(s): "
            f"{', '.join(m.name for m in models)} on backend(s) {', '.join(backends)}",
        ),
    )


def keys_and_files_outcome(config: PoolConfig | None, pool: Path, models: Sequence[Model]) -> Outcome:
    """The run's preflight on ``models`` and every judge: key variables set, model files intact."""
    if config is None or not models:
        return Outcome("keys and model files", "SKIP", "no usable pool file")
    used = [*models, *config.judge_models()]
    try:
        preflight(config, pool, used)
    except PreflightError as exc:
        return failed(
            "keys and model files",
            f"{len(exc.issues)} problem(s) a run would stop on (exit 2)",
            "do what each line says, then check again",
            [str(issue) for issue in exc.issues],
        )
    keys = sorted({var for m in used if (var := getattr(config.backend_of(m), "api_key_env", None))})
    local = sorted({m.gguf for m in used if isinstance(config.backend_of(m), LlamaCppBackend) and m.gguf})
    said_keys = f"{len(keys)} key variable(s) set" if keys else "no key variable needed"
    said_files = f"{len(local)} local model file(s) present and intact" if local else "no local model file"
    return passed("keys and model files", f"{said_keys}; {said_files} (models and judge)")


def judge_outcome(config: PoolConfig | None, items: Sequence[Item] | None) -> Outcome:
    """Judged items need a judge whose backend the pool declares; the gate itself never calls it."""
    if config is None:
        return Outcome("judge", "SKIP", "no usable pool file")
    judged = _judged_by_gold_type(items)
    judges = config.judge_models()
    if not judges:
        if judged:
            return failed(
                "judge",
                f"no judge: in the pool file, and {sum(judged.values())} loaded item(s) are judged "
                f"({', '.join(sorted(judged))}): a run would leave them unscorable",
                "add a judge: block (docs/pool-file.md, 'Configuring the judge'), "
                "or run pool.run with --no-judge if those items may stay unscorable",
            )
        return passed("judge", "no judged items loaded; no judge needed")
    undeclared = [j for j in judges if j.backend not in config.backends]
    if undeclared:  # the pool file's validation refuses this already; kept so the gate says it in its own words
        return failed(
            "judge",
            f"judge {undeclared[0].name} uses backend {undeclared[0].backend!r}, not declared",
            "declare it under backends:",
        )
    shown = ", ".join(f"{j.name} on backend {j.backend!r} ({config.backend_of(j).type})" for j in judges)
    return passed("judge", f"{'panel: ' if len(judges) > 1 else ''}{shown}; declared, not called by this gate")


def _judged_by_gold_type(items: Sequence[Item] | None) -> dict[str, int]:
    """Judged items by gold type."""
    counts: dict[str, int] = {}
    for item in items or ():
        if item.gold_type in JUDGED_GOLD_TYPES:
            counts[item.gold_type] = counts.get(item.gold_type, 0) + 1
    return counts
