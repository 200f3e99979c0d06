"""pool: plan and execute a model-pool run, in rooms that follow the data.

The Python API (what ``python -m pool.run`` wraps)::

    from pool import RunSpec, run_pool, resume, rescore          # and arun_pool, aresume, arescore

Rooms, in the data's order:

- :mod:`~pool.config` — the pool file: schema, cross-references, preflight (keys, model files);
- :mod:`~pool.items_source`, :mod:`~pool.selection` — which items a run sends; :mod:`~pool.plan` — the
  work a run has (models × items as units with their requests);
- :mod:`~pool.execute` — the run ``Session``: backends, executors (local, Ray), scheduler, cache, budget;
- :mod:`~pool.adaptive` — ``--adaptive``: new models answer only the items most informative for them
  (item banks from :mod:`routing.bank`), their full-suite scores estimated with an interval;
- :mod:`~pool.score` — gold metrics and the judge's verdicts, written to ``scores.jsonl``;
- :mod:`~pool.store` — the run store, ``results.jsonl``, ``summary.json``;
- :mod:`~pool.api` (:func:`run_pool`, :func:`resume`, :func:`rescore`, their async twins, :func:`describe_plan`)
  over :mod:`~pool.run_spec` (what a run is asked to do) and :mod:`~pool.run_thread` (a run beside an event
  loop); :mod:`~pool.run` is the CLI over the API.

Beside the run: :mod:`~pool.check` (the gate before a paid run), :mod:`~pool.calibrate` (the judge against
answers whose truth is known), :mod:`~pool.freshness` (the gold freshness audit: is each gold point still what
the latest guideline says?), :mod:`~pool.pairwise` (the judge compares side by side the answers of
the models a run left tied), :mod:`~pool.live` (a live run's questions answered by a reference agent, before
the run), :mod:`~pool.serve` (a run's routing manifest served as an endpoint),
:mod:`~pool.roster` (who answers and who judges), :mod:`~pool.chip_submission` (a CHIP submission file),
:mod:`~pool.decision_recognition` (that CLI with the runners' embeddings client), :mod:`~pool.version`.

The API's names are imported on first use, so ``import pool.config`` stays light; type checkers see
them through the ``TYPE_CHECKING`` imports below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pool.version import __version__ as __version__

if TYPE_CHECKING:
    from pool.api import (
        RunInputError,
        RunResult,
        arescore,
        aresume,
        arun_pool,
        describe_plan,
        rescore,
        resume,
        run_pool,
    )
    from pool.run_spec import RunSpec

_API = {
    "RunSpec": "pool.run_spec",
    "RunResult": "pool.api",
    "RunInputError": "pool.api",
    "run_pool": "pool.api",
    "resume": "pool.api",
    "rescore": "pool.api",
    "arun_pool": "pool.api",
    "aresume": "pool.api",
    "arescore": "pool.api",
    "describe_plan": "pool.api",
}
__all__ = [
    "RunInputError",
    "RunResult",
    "RunSpec",
    "arescore",
    "aresume",
    "arun_pool",
    "describe_plan",
    "rescore",
    "resume",
    "run_pool",
]


def __getattr__(name: str) -> Any:
    if name in _API:
        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'pool' has no attribute {name!r}")
