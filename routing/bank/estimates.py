"""Adaptive estimates in a build: read ``RUN_DIR/adaptive.json``, mark them ``estimated`` everywhere.

A model scored adaptively (``pool.run --adaptive``) answered a few items chosen for it, so its
bucket means in the leaderboard are means over those items, not the suite. The build therefore:

- puts the estimated full-suite scores, with their 95% intervals, in ``leaderboard.json`` under
  ``estimated`` (``{model: {family: {score, low, high, se, items_used, items_total, estimated}}}``,
  0–100) and marks each leaderboard cell of such a model ``estimated: true``;
- marks every manifest candidate of such a model ``estimated: true``, and never lets it be a
  decision's pick on its subset: the pick goes to the best model in the decision's order that was
  evaluated in full (``decisive: false``, ``chosen_by: full_evaluation``, ``estimated_leader``
  naming the model that led), or, when there is none, stays with ``decisive: false``. A decisive
  pick needs a paired test on real answers over the suite: evaluate the model in full.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from routing.load.runs import LoadError

ADAPTIVE_FILENAME = "adaptive.json"
NOTE = (
    "estimated from an adaptive subset of items; a decisive pick needs a full evaluation "
    "(a paired test on real answers)"
)


def read_estimates(run_dirs: Sequence[Path | str]) -> dict[str, dict[str, Any]]:
    """``{model name: {family: estimate}}`` from the runs' ``adaptive.json`` (a later argument wins);
    a run without one adds nothing."""
    out: dict[str, dict[str, Any]] = {}
    for run_dir in run_dirs:
        path = Path(run_dir) / ADAPTIVE_FILENAME
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            raise LoadError(f"{path}: unreadable ({exc}); finish the run with `python -m pool.run --resume`") from None
        for model, families in (document.get("models") or {}).items():
            out.setdefault(model, {}).update(families)
    return out


def _estimated_labels(labels: Iterable[str], names: Mapping[str, str], estimates: Mapping[str, Any]) -> set[str]:
    return {label for label in labels if names.get(label, label) in estimates}


def mark_leaderboard(leaderboard: dict[str, Any], estimates: Mapping[str, Any]) -> None:
    """The ``estimated`` block, and ``estimated: true`` on every cell of an estimated model."""
    if not estimates:
        return
    leaderboard["estimated"] = {model: dict(families) for model, families in sorted(estimates.items())}
    names = {label: entry.get("name", label) for label, entry in (leaderboard.get("models") or {}).items()}
    for buckets in leaderboard["families"].values():
        for bucket in buckets:
            for cell in bucket["cells"]:
                label = cell["model"].split(" [", 1)[0]  # a label may carry its judge
                if names.get(label, label) in estimates:
                    cell["estimated"] = True


def _fix_decision(block: dict[str, Any], estimated: set[str]) -> None:
    for candidate in block.get("candidates") or ():
        if candidate.get("model") in estimated:
            candidate["estimated"] = True
    pick = block.get("model")
    if pick not in estimated:
        return
    order = list(block.get("tied_top") or ()) + [c.get("model") for c in block.get("candidates") or ()]
    full = next((m for m in order if m is not None and m not in estimated), None)
    block.update(decisive=False, estimated_leader=pick, estimated_note=NOTE)
    if full is not None:
        block.update(model=full, chosen_by="full_evaluation")


def mark_manifest(manifest: dict[str, Any], estimates: Mapping[str, Any]) -> None:
    """Estimated candidates marked; no decision picks an estimated model (see the module docstring)."""
    if not estimates:
        return
    names = {label: entry.get("name", label) for label, entry in (manifest.get("models") or {}).items()}
    estimated = _estimated_labels(names, names, estimates)
    manifest["estimated_models"] = sorted(estimated)
    blocks = [manifest.get("default"), manifest.get("orchestrator"), *(manifest.get("families") or {}).values()]
    routes = manifest.get("buckets") or {}
    for block in [*blocks, *routes.values()]:
        if isinstance(block, dict):
            _fix_decision(block, estimated)
    for entry in routes.values():  # a bucket served by a parent takes the parent's (fixed) pick
        served = entry.get("served_by")
        if entry.get("chosen_by") == "fallback" and served and served != entry.get("family", "") + "/":
            source = (
                routes.get(served)
                if "/" in served
                else (manifest.get("default") if served == "default" else (manifest.get("families") or {}).get(served))
            )
            if source and source.get("model") is not None:
                entry["model"] = source["model"]
