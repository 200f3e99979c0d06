"""Benchmark the routing aggregation: leaderboards with bootstrap CIs, and Bradley–Terry with CIs.

Workloads (seeded synthetic data, built in memory; the timed code is the code routing.build runs):

- ``leaderboards``: ``routing.boards.leaderboard.build_buckets`` — every family's buckets with 95%
  percentile-bootstrap CIs (1,000 resamples) for 50 models × 20,000 items (10^6 score rows:
  10 capability tasks with 5 judge sub-metrics, 20 specialty domains in 5 systems with safety-floor
  and claim columns, routing, tool decision, probes, exam, a 148-class classification task
  (macro-F1) and CHIP cases).
- ``bt_battles``: Bradley–Terry on 10^6 arena-style battles (random pairs of 50 models, ~10% ties)
  with 100 battle-level bootstrap rounds: dedup into counts, fit, 100 refits.
- ``bt_items``: the routing path — 50 models × 817 items (1,000,825 item-derived battles): the
  outcome matrix, 100 item-level bootstrap count tables, fit and 100 refits.
- ``build`` (unless ``--skip-build``): ``python -m routing.build`` in a subprocess on the
  leaderboard data written as ``scores.jsonl`` (load, leaderboards, pairwise for every scope,
  hard subset, manifest, report); its peak is the child's maximum RSS, not tracemalloc.

    python -m bench.routing_bench            # full sizes
    python -m bench.routing_bench --quick    # 10 models × 2,000 items, 10^5 battles

Times are time.perf_counter over one run (the workloads take seconds; repeats would mostly
measure caches). Peak memory is a separate untimed run under tracemalloc: everything the workload
allocates, inputs excluded.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy

from bench.harness.measure import peak_mb
from routing.boards.leaderboard import build_buckets
from routing.load.table import ModelIdentity, ScoreTable, intern, make_entrants
from routing.stats.intervals import resample_counts, resample_indices
from routing.stats.rating_fits import (
    TIE,
    battle_counts,
    bootstrap_battle_counts,
    bootstrap_outcome_counts,
    bradley_terry,
    outcome_counts,
    outcome_matrix,
)

FAMILY_LAYOUT = (  # (family, gold_type, task, share of items)
    *[("capability", "reference", f"cap_task_{i}", 0.05) for i in range(10)],
    ("specialty", "criteria", "criteria", 0.2),
    ("orchestration", "routing", "specialty_routing", 0.05),
    ("orchestration", "tool_decision", "tool_decision", 0.05),
    ("robustness", "probe", "probes", 0.05),
    ("exam", "single_choice", "single_choice", 0.05),
    ("tcm", "classification", "tcm_sd", 0.05),
    ("tcm", "tcm_case", "chip", 0.05),
)


BINARY_GOLD_TYPES = ("routing", "tool_decision", "probe", "single_choice", "classification")


def synthetic_table(
    n_models: int, n_items: int, seed: int = 0, families: Sequence[tuple[str, str, str, float]] = FAMILY_LAYOUT
) -> ScoreTable:
    """A ScoreTable with every row scored except ~2% infra errors; models differ in skill.
    ``families``: (family, gold_type, task, share of the items) rows (default :data:`FAMILY_LAYOUT`)."""
    rng = np.random.default_rng(seed)
    skill = np.linspace(0.3, 0.9, n_models)
    layout = []
    for family, gold_type, task, share in families:
        layout += [(family, gold_type, task)] * round(share * n_items)
    layout = layout[:n_items]
    n = len(layout) * n_models
    item = np.tile(np.arange(len(layout), dtype=np.int32), n_models)
    entrant = np.repeat(np.arange(n_models, dtype=np.int32), len(layout))
    family, fam_vocab = intern([f for f, _, _ in layout])
    gold, gold_vocab = intern([g for _, g, _ in layout])
    task, task_vocab = intern([t for _, _, t in layout])
    domains = [f"system{i % 5}:topic{i % 20}" if f == "specialty" else "(none)" for i, (f, _, _) in enumerate(layout)]
    domain, domain_vocab = intern(domains)
    system, system_vocab = intern([d.split(":")[0] for d in domains])
    p = skill[entrant] * rng.uniform(0.6, 1.2, len(layout))[item]
    value = np.clip(rng.normal(p, 0.15), 0, 1)
    binary = np.isin(gold[item], [gold_vocab.index(g) for g in BINARY_GOLD_TYPES])
    value = np.where(binary, (rng.random(n) < np.clip(p, 0, 1)).astype(float), value)
    status = np.where(rng.random(n) < 0.02, 1, 0).astype(np.int8)
    value[status == 1] = np.nan
    judged = np.isin(gold[item], [gold_vocab.index("reference"), gold_vocab.index("criteria")])
    metrics = {
        name: np.where(judged & (status == 0), np.round(value * 10), np.nan)
        for name in ("coverage", "accuracy", "safety", "grounding")
    }
    metrics["total"] = np.where(judged & (status == 0), np.round(value * 40), np.nan)
    specialty = gold[item] == gold_vocab.index("criteria")
    flags = {
        "safety_floor": np.where(specialty, (rng.random(n) < 0.05).astype(float), np.nan),
        "claims_unsupported": np.where(specialty, rng.integers(0, 3, n).astype(float), np.nan),
        "claims_total": np.where(specialty, 6.0, np.nan),
        "grounding_unsupported": np.full(n, np.nan),
    }
    labels = {}
    classes = [f"syndrome_{c:03d}" for c in range(148)]
    for row in np.flatnonzero((gold[item] == gold_vocab.index("classification")) & (status == 0)):
        g = classes[int(item[row]) % 148]
        labels[int(row)] = (g if value[row] == 1.0 else classes[(int(item[row]) + 1) % 148], g, ())
    entrants = make_entrants(
        [(ModelIdentity.from_record({"name": f"model_{i:02d}", "backend": "llamacpp"}), None) for i in range(n_models)]
    )
    return ScoreTable(
        entrants=tuple(entrants),
        items=tuple(f"bench/{t}/{i}" for i, (_, _, t) in enumerate(layout)),
        vocab={
            "family": fam_vocab,
            "task": task_vocab,
            "domain": domain_vocab,
            "system": system_vocab,
            "gold_type": gold_vocab,
            "suite": ("bench",),
        },
        entrant=entrant,
        item=item,
        family=family[item],
        task=task[item],
        domain=domain[item],
        system=system[item],
        gold_type=gold[item],
        suite=np.zeros(n, dtype=np.int32),
        status=status,
        value=value,
        passed=np.where(status == 0, (value >= 0.5).astype(float), np.nan),
        latency_s=rng.uniform(0.5, 5, n),
        completion_tokens=rng.integers(50, 800, n).astype(float),
        run=np.zeros(n, dtype=np.int16),
        metrics=metrics,
        flags=flags,
        labels=labels,
    )


def traced_peak_mb(run: Callable[[], Any]) -> float:
    """Peak traced allocation (MiB) while run() executes, with the bootstrap caches cleared first."""
    resample_indices.cache_clear()
    resample_counts.cache_clear()
    return peak_mb(run)


def timed(run: Callable[[], Any]) -> tuple[float, Any]:
    resample_indices.cache_clear()
    resample_counts.cache_clear()
    gc.collect()
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def arena_battles(n_models: int, n_battles: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random pairs; P(first wins) from BT strengths, with ~10% ties."""
    rng = np.random.default_rng(seed)
    strength = np.linspace(-1.5, 1.5, n_models)
    a = rng.integers(0, n_models, n_battles)
    b = (a + rng.integers(1, n_models, n_battles)) % n_models
    p = 1 / (1 + np.exp(-(strength[a] - strength[b])))
    u = rng.random(n_battles)
    return a, b, np.where(u < 0.1, TIE, np.where(u < 0.1 + 0.9 * p, 0, 1))


def item_scores(n_models: int, n_items: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    skill = np.linspace(0.2, 0.9, n_models)
    return np.round(np.clip(rng.normal(skill[None, :], 0.25, size=(n_items, n_models)), 0, 1) * 40) / 40


def run_bt_battles(a: np.ndarray, b: np.ndarray, o: np.ndarray, m: int, rounds: int) -> dict[str, np.ndarray]:
    counts = battle_counts(a, b, o, m)
    return bradley_terry(counts, bootstrap_battle_counts(counts, rounds, 0), m)


def run_bt_items(values: np.ndarray, rounds: int) -> dict[str, np.ndarray]:
    outcomes = outcome_matrix(values)
    return bradley_terry(outcome_counts(outcomes), bootstrap_outcome_counts(outcomes, rounds, 0), values.shape[1])


def write_scores(table: ScoreTable, run_dir: Path) -> None:
    """The synthetic table as a run directory (scores.jsonl + summary.json) for the end-to-end build,
    rows in the order pool.run writes them: by model, then item id."""
    names = {k: table.vocab[k] for k in ("family", "task", "domain", "gold_type")}
    status_names = ("scored", "infra_error", "unscorable")
    item_rank = np.argsort(np.argsort(np.array(table.items, dtype=object), kind="stable"), kind="stable")
    with (run_dir / "scores.jsonl").open("w", encoding="utf-8") as f:
        for r in np.lexsort((item_rank[table.item], table.entrant)).tolist():
            entrant = table.entrants[table.entrant[r]]
            scored = table.status[r] == 0
            details = {}
            if r in table.labels:
                details = {"predicted_label": table.labels[r][0], "gold_label": table.labels[r][1]}
            f.write(
                json.dumps(
                    {
                        "model": entrant.model.name,
                        "item_id": table.items[table.item[r]],
                        "suite": "bench",
                        "task": names["task"][table.task[r]],
                        "domain": names["domain"][table.domain[r]],
                        "gold_type": names["gold_type"][table.gold_type[r]],
                        "family": names["family"][table.family[r]],
                        "status": status_names[table.status[r]],
                        "value": float(table.value[r]) if scored else None,
                        "passed": bool(table.passed[r]) if scored else None,
                        "metrics": {k: float(v[r]) for k, v in table.metrics.items() if not np.isnan(v[r])},
                        "judge": None,
                        "details": details,
                        "latency_s": float(table.latency_s[r]),
                        "completion_tokens": int(table.completion_tokens[r]),
                        "model_identity": entrant.model.as_dict(),
                    }
                )
                + "\n"
            )
    (run_dir / "summary.json").write_text(
        json.dumps(
            {
                "run_id": "bench",
                "created_at": "2026-11-29T00:00:00Z",
                "pool_fingerprint": "bench",
                "data_fingerprint": "bench",
            }
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.routing_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10 models × 2,000 items; 10^5 battles; 20 BT rounds")
    parser.add_argument("--skip-build", action="store_true", help="leave out the end-to-end routing.build workload")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    models, items, battles, rounds = (10, 2_000, 100_000, 20) if args.quick else (50, 20_000, 1_000_000, 100)
    bt_items = 82 if args.quick else 817  # items × C(models, 2) ≈ battles
    rows = []

    table = synthetic_table(models, items)
    seconds, buckets = timed(lambda: build_buckets(table, rounds=1000, seed=0))
    cells = sum(len(b.cells) for b in buckets)
    size = (
        f"{models} models × {items:,} items ({len(table):,} rows), {len(buckets)} buckets, {cells:,} cells, "
        "1,000 resamples"
    )
    rows.append(("leaderboards", size, seconds, traced_peak_mb(lambda: build_buckets(table, rounds=1000, seed=0))))

    a, b, o = arena_battles(50, battles)
    seconds, result = timed(lambda: run_bt_battles(a, b, o, 50, rounds))
    rows.append(
        (
            "bt_battles",
            f"50 models, {battles:,} battles, {rounds} bootstrap rounds",
            seconds,
            traced_peak_mb(lambda: run_bt_battles(a, b, o, 50, rounds)),
        )
    )
    ranks = np.argsort(np.argsort(result["rating"]))
    assert np.corrcoef(ranks, np.arange(50))[0, 1] > 0.99, "Bradley–Terry lost the simulated order"

    values = item_scores(50, bt_items)
    n_battles = bt_items * 50 * 49 // 2
    seconds, _ = timed(lambda: run_bt_items(values, rounds))
    rows.append(
        (
            "bt_items",
            f"50 models × {bt_items} items = {n_battles:,} battles, {rounds} item-bootstrap rounds",
            seconds,
            traced_peak_mb(lambda: run_bt_items(values, rounds)),
        )
    )

    if not args.skip_build:
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = Path(tmp)
            write_scores(table, run_dir)
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "routing.build", "--run", str(run_dir)], check=True, stdout=subprocess.DEVNULL
            )
            seconds = time.perf_counter() - start
            rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # Linux: KiB
            size = (
                f"`python -m routing.build` on the leaderboard data ({len(table):,} scores.jsonl rows), default options"
            )
            rows.append(("build", size, seconds, rss_mb))

    print(
        f"python {platform.python_version()}, numpy {np.__version__}, scipy {scipy.__version__}, "
        f"{platform.machine()}, {__import__('os').cpu_count()} cores"
    )
    print("| workload | size | time (s) | peak (MB) |")
    print("|---|---|---:|---:|")
    for name, size, seconds, peak in rows:
        print(f"| {name} | {size} | {seconds:.2f} | {'–' if np.isnan(peak) else f'{peak:.0f}'} |")
    if args.json:
        Path(args.json).write_text(
            json.dumps([dict(zip(("workload", "size", "seconds", "peak_mb"), r, strict=True)) for r in rows], indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
