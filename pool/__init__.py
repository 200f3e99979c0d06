"""pool: plan and execute a model-pool run (config, plan, executors, run store, CLI).

The Python API (what ``python -m pool.run`` wraps)::

    from pool import RunSpec, run_pool, resume, rescore

Names are imported on first use, so ``import pool.config`` stays light.
"""

from __future__ import annotations

from typing import Any

# The product's version, written once: pyproject.toml reads it (dynamic version), `python -m pool.run
# --version` prints it, CHANGELOG.md has a section per value it has taken.
__version__ = "0.1.0"

_API = {
    "RunSpec": "pool.run_spec",
    "RunResult": "pool.api",
    "RunInputError": "pool.api",
    "run_pool": "pool.api",
    "resume": "pool.api",
    "rescore": "pool.api",
    "describe_plan": "pool.api",
}
__all__ = sorted(_API)


def __getattr__(name: str) -> Any:
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'pool' has no attribute {name!r}")
