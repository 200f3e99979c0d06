"""The zero-budget gate before a paid run: ``python -m pool.check`` (see ``--help``).

The med-agent-verifier README runs a gate (registry coverage, both golds load, an end-to-end
smoke on the candidate side) and lets a run spend judge budget only when it is all green. This
package is that gate for a pool file and its suites, in this order:

1. ``suites`` — the suites load (the built-in demo suite, or ``--data``): items per track and
   gold type, skipped items with their reasons;
2. ``registry`` — every gold type and task a run of them can send has a scorer, and every judged
   gold type a judge contract;
3. ``round trip`` — every item survives ``to_record`` → the loader unchanged;
4. ``pool`` — the pool file validates and names the models to check;
5. ``keys and model files`` — the run's preflight (:mod:`pool.config.preflight`), on the models and
   the judge;
6. ``judge`` — judged items have a judge declared, on a declared backend;
7. ``smoke`` — one item per track sent to every selected model through the run API with no judge,
   no routing and no cache, in a temporary folder; every answer must be non-empty.

Each check yields one :class:`Outcome`; the gate passes when none failed. Nothing here asks a judge.

    for outcome in gate(CheckSpec(pool=Path("model_pool.yaml"))):
        print(*outcome.lines(), sep="\\n")
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pool.check.assets import judge_outcome, keys_and_files_outcome, pool_outcome
from pool.check.outcome import CheckInputError, Outcome
from pool.check.smoke import smoke_outcome
from pool.check.suites import load_outcome, registry_outcome, round_trip_outcome

__all__ = ["CheckInputError", "CheckSpec", "Outcome", "exit_code", "gate"]


@dataclass(frozen=True)
class CheckSpec:
    """What the gate checks: a pool file, the suites (None: the built-in demo suite), the models
    (None: every enabled one) and whether the smoke sends anything."""

    pool: Path
    data: Sequence[Path] | None = None
    models: Sequence[str] | None = None
    smoke: bool = True


def gate(spec: CheckSpec) -> Iterator[Outcome]:
    """Every check's outcome, in order, as each finishes. Raises :class:`CheckInputError` for input
    that names nothing usable (a missing path, an unknown model)."""
    for path in [spec.pool, *(spec.data or ())]:
        if not path.exists():
            flag = "--pool" if path == spec.pool else "--data"
            raise CheckInputError(f"{flag} {path}: no such file or folder; check the path")
    loaded, outcome = load_outcome(spec.data)
    yield outcome
    registry = registry_outcome(loaded.items if loaded else None)
    yield registry
    yield round_trip_outcome(loaded.items if loaded else None)
    config, models, outcome = pool_outcome(spec.pool, spec.models)
    yield outcome
    assets = keys_and_files_outcome(config, spec.pool, models)
    yield assets
    yield judge_outcome(config, loaded.scorable_items if loaded else None)
    needed = {
        "suites": loaded is not None and bool(loaded.scorable_items),
        "registry": registry.status == "PASS",
        "pool": config is not None and bool(models),
        assets.check: assets.status == "PASS",
    }
    blocked = [name for name, held in needed.items() if not held]
    if not spec.smoke:
        yield Outcome("smoke", "SKIP", "--no-smoke: nothing was sent")
    elif blocked:
        yield Outcome("smoke", "SKIP", f"not sent: the {', '.join(blocked)} check(s) above must pass first")
    else:
        assert loaded is not None and config is not None
        yield smoke_outcome(spec.pool, spec.data, config, models, loaded.scorable_items)


def exit_code(outcomes: Sequence[Outcome]) -> int:
    """0 when no check failed, else 1 (bad input, 2, is raised before)."""
    return 1 if any(o.status == "FAIL" for o in outcomes) else 0
