"""Adaptive scoring against full evaluation: error, interval coverage, rank agreement, items used.

Two banks, each by leave-one-model-out — the held-out model plays a new model: the bank is fitted on
the others (:func:`routing.bank.history.fit_bank`: 2PL by MAP and the check of the bank's predicted
scores against the history's), the held-out model takes an adaptive test
(:class:`routing.bank.adaptive.AdaptiveTest`, at most ``--budget`` of the items, 4 per round, the run's
default stop), and its estimate is compared with its own full-suite score:

- **simulated**: ``--repeats`` banks of known parameters (each ``--models`` 30 × ``--items`` 2,000;
  ability N(0, 1), log-discrimination N(0.2, 0.4), difficulty N(0, 1.2); seeds ``--seed``,
  ``--seed`` + 1, …), answers drawn from the 2PL model;
- **history**: the run index under ``--history`` (default ``runs/``), per family; where the history has
  too few fully evaluated models it says so (the run falls back to full evaluation).

Figures: mean absolute error of the estimated family score (0–100), coverage of its 95% interval
(overall, and for the models of true ability beyond ±1.6, where the bank has fewest neighbours),
Spearman between the estimated and full-suite scores over the held-out models (per bank), mean items
used. Goals: MAE ≤ 1.5 from ≤ 10% of the items, coverage ≥ 0.93, Spearman ≥ 0.95 in every bank (exit 1
when the simulated banks miss one).

    python -m bench.adaptive                 # 3 banks × 30 models × 2,000 items; --quick: 1 × 10 × 600
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from routing.bank.adaptive import AdaptiveTest
from routing.bank.history import MIN_MODELS, FamilyMatrix, family_matrices, fit_bank, history_table
from routing.bank.irt import probability

GOALS = {"mae": 1.5, "coverage": 0.93, "spearman": 0.95, "share": 0.10}
BATCH = 4
EXTREME = 1.6  # |true ability| beyond which a held-out model counts as extreme


def simulated_matrix(models: int, items: int, seed: int) -> tuple[FamilyMatrix, np.ndarray]:
    """A bank of known parameters and its models' true abilities."""
    rng = np.random.default_rng(seed)
    a = np.exp(rng.normal(0.2, 0.4, items))
    b = rng.normal(0.0, 1.2, items)
    theta = rng.normal(0.0, 1.0, models)
    y = (rng.random((models, items)) < probability(a, b, theta)).astype(float)
    names = tuple(f"m{i:02d}" for i in range(models))
    return FamilyMatrix(f"simulated-{seed}", names, tuple(f"i{j:04d}" for j in range(items)), y), theta


def held_out(matrix: FamilyMatrix, budget: float, target_se: float, seed: int) -> list[dict[str, Any]] | str:
    """Each fully evaluated model held out in turn: its adaptive estimate and its full score (0–1),
    or why the family has no bank."""
    full_models = matrix.full_models()
    if len(full_models) <= MIN_MODELS:
        return (
            f"{matrix.family}: {len(full_models)} fully evaluated model(s) in the history; a bank needs {MIN_MODELS} "
            f"(leave-one-model-out {MIN_MODELS + 1}); a run evaluates this family in full"
        )
    rows = []
    for i in full_models:
        name = matrix.models[i]
        bank = fit_bank(matrix, leave_out=[name])
        if isinstance(bank, str):
            return bank
        answers = matrix.y[i]
        index = np.flatnonzero(~np.isnan(answers))
        test = AdaptiveTest(
            bank.fit.a[index],
            bank.fit.b[index],
            budget=max(1, int(budget * len(index))),
            target_se=target_se,
            seed=seed + int(i),
            check=bank.check,
        )
        while not test.done():
            for j in test.next_items(BATCH):
                test.tell(j, answers[index[j]])
        e = test.estimate()
        full = float(answers[index].mean())
        rows.append(
            {"model": name, "estimate": e.score, "full": full, "low": e.low, "high": e.high, "used": e.items_used}
            | {"total": len(index), "theta": e.theta}
        )
    return rows


def summary(rows: list[dict[str, Any]], banks: list[list[dict[str, Any]]], truth: np.ndarray | None = None) -> dict:
    """The figures over held-out ``rows`` (``banks``: the same rows per bank, for Spearman)."""
    est, full = np.array([r["estimate"] for r in rows]), np.array([r["full"] for r in rows])
    covered = np.array([r["low"] <= r["full"] <= r["high"] for r in rows])
    used, total = np.array([r["used"] for r in rows], float), np.array([r["total"] for r in rows], float)
    rho = [float(spearmanr([r["estimate"] for r in b], [r["full"] for r in b])[0]) for b in banks]
    out = {
        "held_out": len(rows),
        "items": int(total.mean()),
        "mae": round(float(np.mean(np.abs(est - full))) * 100, 3),
        "max_error": round(float(np.max(np.abs(est - full))) * 100, 3),
        "coverage": round(float(covered.mean()), 3),
        "interval_width": round(float(np.mean([r["high"] - r["low"] for r in rows])) * 100, 2),
        "spearman_min": round(min(rho), 4),
        "spearman_mean": round(float(np.mean(rho)), 4),
        "items_used": round(float(used.mean()), 1),
        "share_used": round(float((used / total).mean()), 4),
    }
    if truth is not None:
        extreme = np.abs(truth) > EXTREME
        out["extreme_models"] = int(extreme.sum())
        out["coverage_extreme"] = round(float(covered[extreme].mean()), 3) if extreme.any() else None
        out["mae_extreme"] = round(float(np.mean(np.abs(est - full)[extreme])) * 100, 3) if extreme.any() else None
    return out


def simulated(models: int, items: int, repeats: int, budget: float, target_se: float, seed: int) -> dict:
    banks, truth = [], []
    for r in range(repeats):
        matrix, theta = simulated_matrix(models, items, seed + r)
        rows = held_out(matrix, budget, target_se, seed)
        assert not isinstance(rows, str), rows
        banks.append(rows)
        truth.append(theta[matrix.full_models()])
    return summary([r for b in banks for r in b], banks, np.concatenate(truth))


def history_rows(root: Path, budget: float, target_se: float, seed: int) -> list[dict[str, Any]]:
    table, notes = history_table(root)
    if table is None:
        return [{"family": "-", "fallback": note} for note in notes]
    out = []
    for family, matrix in family_matrices(table).items():
        rows = held_out(matrix, budget, target_se, seed)
        if isinstance(rows, str):  # the run would fall back to full evaluation for this family
            out.append({"family": family, "fallback": f"history too small: {rows}"})
        else:
            out.append({"family": family, **summary(rows, [rows])})
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.adaptive", description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=30)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3, help="simulated banks (seeds --seed, --seed + 1, …)")
    parser.add_argument("--budget", type=float, default=0.10, help="share of the items asked at most")
    parser.add_argument("--se", type=float, default=0.0, help="stop at this score sd (points; 0: budget only)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--history", default="runs", help="runs root holding index.jsonl (default runs)")
    parser.add_argument(
        "--quick", action="store_true", help="1 bank of 10 models × 600 items (a smoke, goals not judged)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    models, items, repeats = (10, 600, 1) if args.quick else (args.models, args.items, args.repeats)
    started = time.perf_counter()
    sim = simulated(models, items, repeats, args.budget, args.se / 100, args.seed)
    sim["seconds"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    history = history_rows(Path(args.history), args.budget, args.se / 100, args.seed)
    print(f"simulated: {repeats} bank(s) of {models} models × {items} items, leave-one-model-out:")
    print("  " + json.dumps(sim))
    print(f"history {args.history} ({time.perf_counter() - started:.1f} s):")
    for row in history:
        print("  " + json.dumps(row, ensure_ascii=False))
    met = {
        "mae": sim["mae"] <= GOALS["mae"],
        "coverage": sim["coverage"] >= GOALS["coverage"],
        "spearman": sim["spearman_min"] >= GOALS["spearman"],
        "share": sim["share_used"] <= GOALS["share"] + 1e-9,
    }
    shown = ", ".join(f"{k} {'met' if ok else 'MISSED'}" for k, ok in met.items())
    print("goals: " + shown + (" (--quick: a smoke, not judged)" if args.quick else ""))
    if args.json:
        Path(args.json).write_text(json.dumps({"simulated": sim, "history": history, "goals": met}, indent=1) + "\n")
    return 0 if all(met.values()) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
