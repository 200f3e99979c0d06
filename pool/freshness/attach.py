"""How a run finds the gold freshness audit: its pool file names it, ``freshness: PATH`` (a
``freshness.json`` written by ``python -m pool.freshness``; a relative path is read from the pool
file's folder).

The run checks the file before any request (a missing or foreign file is bad input, exit 2, naming the
pool file's line) and copies it into the run folder as ``freshness.json`` when the routing files are
built: ``routing.build`` reads it there (or from ``--freshness FILE``) and marks the items that carry a
``drifted`` point, and their buckets, "gold may be stale". The items stay in every statistic: a person
decides what to change. A copy, so the run's report can be rebuilt later with the audit it was run with.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from pool.config import PoolConfig
from pool.config.errors import Issue
from pool.config.yaml_lines import YamlProblem, locate, parse_yaml

KIND = "medpool-freshness-audit"  # what an audit file says it is (pool.freshness.report writes it)
AUDIT_FILENAME = "freshness.json"  # in an audit folder, and its copy in a run folder


def audit_file(config: PoolConfig, pool_file: str | os.PathLike[str]) -> Path | None:
    """The audit the pool file names, resolved from its folder; None when it names none."""
    if config.freshness is None:
        return None
    path = Path(config.freshness).expanduser()
    return path if path.is_absolute() else Path(pool_file).resolve().parent / path


def _line(pool_file: str | os.PathLike[str]) -> int | None:
    try:
        root = parse_yaml(Path(pool_file).read_text(encoding="utf-8")).root
    except (OSError, UnicodeDecodeError, YamlProblem):
        return None
    return locate(root, ("freshness",))[0] if root is not None else None  # type: ignore[arg-type]


def check_audit(config: PoolConfig, pool_file: str | os.PathLike[str]) -> None:
    """ValueError ``file:line: freshness: …`` when the named audit cannot be read or is not an audit."""
    path = audit_file(config, pool_file)
    if path is None:
        return
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        problem = None if isinstance(document, dict) and document.get("kind") == KIND else f"not a {KIND} file"
    except (OSError, UnicodeDecodeError) as exc:
        problem = f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
    except ValueError as exc:
        problem = f"is not JSON ({exc})"
    if problem is not None:
        message = (
            f"{path}: {problem}; name the freshness.json a `python -m pool.freshness` audit wrote "
            "(a relative path is read from this file's folder), or remove the key"
        )
        raise ValueError(str(Issue(str(pool_file), _line(pool_file), "freshness", message)))


def attach_audit(config: PoolConfig, pool_file: str | os.PathLike[str], run_dir: Path) -> Path | None:
    """Copy the named audit into ``run_dir/freshness.json``; the copy's path, or None when none is named."""
    path = audit_file(config, pool_file)
    if path is None:
        return None
    target = run_dir / AUDIT_FILENAME
    if path.resolve() != target.resolve():
        tmp = target.with_name(f".{AUDIT_FILENAME}.tmp")
        shutil.copyfile(path, tmp)
        tmp.replace(target)
    return target
