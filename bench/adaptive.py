"""Adaptive scoring against full evaluation: error, interval coverage, rank agreement, items used.

Two banks, each by leave-one-model-out — the held-out model plays a new model: the bank is fitted on
the others (:func:`routing.bank.history.fit_bank`: 2PL by MAP plus bootstrap refits), the held-out model
takes an adaptive test (:class:`routing.bank.adaptive.AdaptiveTest`, at most ``--budget`` of the items, 4
per round, the run's default stop), and its estimate is compared with its own full-suite score:

- **simulated**: a bank of known parameters (``--models`` 30 × ``--items`` 2,000; ability N(0, 1),
  log-discrimination N(0.2, 0.4), difficulty N(0, 1.2)), answers drawn from the 2PL model;
- **history**: the run index under ``--history`` (default ``runs/``), per family with a bank; where the
  history has too few fully evaluated models it says so (the run would fall back to full evaluation).

Figures: mean absolute error of the estimated family score (0–100), coverage of its 95% interval,
Spearman between the estimated and full-suite scores over the held-out models, mean items used.
Goals: MAE ≤ 1.5 from ≤ 10% of the items, coverage ≥ 0.93, Spearman ≥ 0.95 (exit 1 when the
simulated bank misses one).

    python -m bench.adaptive                 # ~15 min on 2 busy cores; --quick: 10 models × 600 items
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
from routing.bank.history import FamilyMatrix, family_matrices, fit_bank, history_table
from routing.bank.irt import probability

GOALS = {"mae": 1.5, "coverage": 0.93, "spearman": 0.95, "share": 0.10}
BATCH = 4


def simulated_matrix(models: int, items: int, seed: int) -> FamilyMatrix:
    rng = np.random.default_rng(seed)
    a = np.exp(rng.normal(0.2, 0.4, items))
    b = rng.normal(0.0, 1.2, items)
    theta = rng.normal(0.0, 1.0, models)
    y = (rng.random((models, items)) < probability(a, b, theta)).astype(float)
    return FamilyMatrix(
        "simulated", tuple(f"m{i:02d}" for i in range(models)), tuple(f"i{j:04d}" for j in range(items)), y
    )


def leave_one_out(matrix: FamilyMatrix, budget: float, target_se: float, seed: int) -> dict[str, Any]:
    """Each fully evaluated model held out in turn: its adaptive estimate against its full score."""
    rows = []
    for i in matrix.full_models():
        name = matrix.models[i]
        bank = fit_bank(matrix, leave_out=[name], seed=seed + int(i))
        if isinstance(bank, str):
            return {"family": matrix.family, "skipped": bank}
        answers = matrix.y[i]
        index = np.flatnonzero(~np.isnan(answers))
        test = AdaptiveTest(
            bank.fit.a[index],
            bank.fit.b[index],
            budget=max(1, int(budget * len(index))),
            target_se=target_se,
            seed=seed + int(i),
        )
        while not test.done():
            for j in test.next_items(BATCH):
                test.tell(j, answers[index[j]])
        estimate = test.estimate([(a[index], b[index]) for a, b in bank.alternates])
        full = float(answers[index].mean())
        rows.append((estimate.score, full, estimate.low <= full <= estimate.high, estimate.items_used, len(index)))
    est, full, covered, used, total = (np.array(c, dtype=float) for c in zip(*rows, strict=True))
    return {
        "family": matrix.family,
        "models": len(rows),
        "items": int(total.mean()),
        "mae": round(float(np.mean(np.abs(est - full))) * 100, 3),
        "max_error": round(float(np.max(np.abs(est - full))) * 100, 3),
        "coverage": round(float(covered.mean()), 3),
        "spearman": round(float(spearmanr(est, full)[0]), 4),
        "items_used": round(float(used.mean()), 1),
        "share_used": round(float((used / total).mean()), 4),
    }


def history_rows(root: Path, budget: float, target_se: float, seed: int) -> list[dict[str, Any]]:
    table, notes = history_table(root)
    if table is None:
        return [{"family": "-", "skipped": note} for note in notes]
    out = []
    for matrix in family_matrices(table).values():
        out.append(leave_one_out(matrix, budget, target_se, seed))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.adaptive", description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=30)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--budget", type=float, default=0.10, help="share of the items asked at most")
    parser.add_argument("--se", type=float, default=0.0, help="stop at this score sd (points; 0: budget only)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--history", default="runs", help="runs root holding index.jsonl (default runs)")
    parser.add_argument("--quick", action="store_true", help="10 models × 600 items (a smoke, goals not judged)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    models, items = (10, 600) if args.quick else (args.models, args.items)
    started = time.perf_counter()
    sim = leave_one_out(simulated_matrix(models, items, args.seed), args.budget, args.se / 100, args.seed)
    sim["seconds"] = round(time.perf_counter() - started, 1)
    history = history_rows(Path(args.history), args.budget, args.se / 100, args.seed)
    print(f"simulated bank ({models} models × {items} items), leave-one-model-out:")
    print("  " + json.dumps(sim))
    print(f"history {args.history}:")
    for row in history:
        print("  " + json.dumps(row, ensure_ascii=False))
    met = {
        "mae": sim["mae"] <= GOALS["mae"],
        "coverage": sim["coverage"] >= GOALS["coverage"],
        "spearman": sim["spearman"] >= GOALS["spearman"],
        "share": sim["share_used"] <= GOALS["share"] + 1e-9,
    }
    print("goals: " + ", ".join(f"{k} {'met' if ok else 'MISSED'}" for k, ok in met.items()))
    if args.json:
        Path(args.json).write_text(json.dumps({"simulated": sim, "history": history, "goals": met}, indent=1) + "\n")
    return 0 if all(met.values()) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
