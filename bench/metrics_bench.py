"""Benchmark five `eval` metrics against the plain pure-Python loop a user would write.

Each workload builds its inputs once from a fixed seed, times our implementation and a textbook
baseline on the same inputs in the same process, asserts both give the same answer (a mismatch
stops the run with exit status 1), then measures ours once more under tracemalloc for its peak
memory (never timed: tracemalloc slows allocation-heavy code).

    python -m bench.metrics_bench             # full sizes, a few minutes on 2 cores
    python -m bench.metrics_bench --quick     # every size shrunk 10-100x, a smoke run
    python -m bench.metrics_bench --json results.json

Timing: time.perf_counter over one run, or the best of three when one run takes under a second.
Peak memory: what ours allocates during the whole workload, outputs included, inputs excluded.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import sys
import time
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy

from bench.harness.inputs import (
    FULL,
    QUICK,
    Sizes,
    make_correctness,
    make_dtr_instances,
    make_matches,
    make_syndrome_predictions,
    make_text_pairs,
)
from bench.harness.measure import peak_mb, write_json_report
from eval import dtr_f1, elo_ratings, hard_subset, macro_f1, rouge_l

REPEAT_BELOW_S = 1.0  # runs shorter than this are repeated and the best of three is kept
RECIPE_BUDGET_S = 120.0  # the per-class TCM-SD recipe runs in full only if its estimate fits this


@dataclass(frozen=True)
class Row:
    workload: str
    baseline: str
    size: str
    ours_s: float
    baseline_s: float
    peak_mb: float
    note: str = ""  # set when the baseline time is extrapolated

    @property
    def speedup(self) -> float:
        return self.baseline_s / self.ours_s


class BenchMismatch(AssertionError):
    """Ours and the baseline disagree: the timings would compare different computations."""


def timed(run: Callable[[], Any], repeat: bool = True) -> tuple[float, Any]:
    """(seconds, result) of run(); the best of three when a run is shorter than REPEAT_BELOW_S."""
    start = time.perf_counter()
    result = run()
    best = time.perf_counter() - start
    for _ in range(2 if repeat and best < REPEAT_BELOW_S else 0):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best, result


def check(condition: bool, workload: str, detail: str) -> None:
    if not condition:
        raise BenchMismatch(f"{workload}: ours and the baseline disagree: {detail}")


# --- baselines: the obvious pure-Python loops ---------------------------------------------------


def baseline_char_f1(pred: str, gold: str) -> float:
    tp = sum((Counter(pred) & Counter(gold)).values())
    return 2 * tp / (len(pred) + len(gold)) if tp else 0.0


def baseline_dtr_f1(predicted: list[str], gold: list[str], tau: float) -> tuple[int, int, int]:
    """(tp, fp, fn): char_f1 on every pair, then Kuhn's augmenting-path maximum matching."""
    edges = [[j for j, g in enumerate(gold) if baseline_char_f1(p, g) >= tau] for p in predicted]
    owner = [-1] * len(gold)  # owner[j] = predicted label matched to gold j

    def augment(i: int, seen: list[bool]) -> bool:
        for j in edges[i]:
            if not seen[j]:
                seen[j] = True
                if owner[j] < 0 or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    tp = sum(augment(i, [False] * len(gold)) for i in range(len(predicted)))
    return tp, len(predicted) - tp, len(gold) - tp


def baseline_macro_f1_recipe(preds: list[str], golds: list[str], labels: list[str]) -> dict[str, float]:
    """The TCM-SD benchmark paper's compute_metrics, verbatim but for string labels: three passes per class."""
    acc = sum(p == g for p, g in zip(preds, golds, strict=False)) / len(golds)
    f1_scores = []
    for c in labels:
        tp = sum(1 for p, g in zip(preds, golds, strict=False) if p == c and g == c)
        fp = sum(1 for p, g in zip(preds, golds, strict=False) if p == c and g != c)
        fn = sum(1 for p, g in zip(preds, golds, strict=False) if p != c and g == c)
        prec = tp / (tp + fp) if (tp + fp) > 0 else 0
        rec = tp / (tp + fn) if (tp + fn) > 0 else 0
        f1_scores.append(2 * prec * rec / (prec + rec) if (prec + rec) > 0 else 0)
    return {"accuracy": acc, "macro_f1": sum(f1_scores) / len(labels)}


def baseline_macro_f1_one_pass(preds: list[str], golds: list[str], labels: list[str]) -> dict[str, float]:
    """One pass counting tp/fp/fn per class in dicts, then the per-class F1 mean."""
    tp: dict[str, int] = {}
    fp: dict[str, int] = {}
    fn: dict[str, int] = {}
    for p, g in zip(preds, golds, strict=False):
        if p == g:
            tp[g] = tp.get(g, 0) + 1
        else:
            fp[p] = fp.get(p, 0) + 1
            fn[g] = fn.get(g, 0) + 1
    f1_total = 0.0
    for c in labels:
        hits, predicted, actual = tp.get(c, 0), tp.get(c, 0) + fp.get(c, 0), tp.get(c, 0) + fn.get(c, 0)
        prec = hits / predicted if predicted else 0.0
        rec = hits / actual if actual else 0.0
        f1_total += 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {"accuracy": sum(tp.values()) / len(golds), "macro_f1": f1_total / len(labels)}


def baseline_hard_subset(item_ids: list[str], rows: list[list[float]], top_k: int, lam: float) -> list[str]:
    """D = (1 − mean) + lam·var per row, then a stable sort by −D.

    Sums use math.fsum (correctly rounded, so independent of the order of a row's values): with the
    plain sum(), rows holding the same number of 1s get D values a few ulps apart, and those float
    crumbs, not input order, would break the (very many) ties.
    """
    difficulty = []
    for row in rows:
        mean = math.fsum(row) / len(row)
        variance = math.fsum((x - mean) ** 2 for x in row) / len(row)
        difficulty.append((1 - mean) + lam * variance)
    order = sorted(range(len(item_ids)), key=lambda i: -difficulty[i])
    return [item_ids[i] for i in order[:top_k]]


def baseline_elo_ratings(matches: list[list[Any]], k: float) -> dict[Hashable, float]:
    ratings: dict[Hashable, float] = {}
    for a, b, score_a in matches:
        rating_a, rating_b = ratings.get(a, 1000.0), ratings.get(b, 1000.0)
        expected_a = 1 / (1 + 10 ** ((rating_b - rating_a) / 400))
        ratings[a] = rating_a + k * (score_a - expected_a)
        ratings[b] = rating_b + k * ((1 - score_a) - (1 - expected_a))
    return ratings


def baseline_rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F with the textbook (n+1)×(m+1) LCS table."""
    cand, ref = candidate.lower().split(), reference.lower().split()
    table = [[0] * (len(ref) + 1) for _ in range(len(cand) + 1)]
    for i in range(1, len(cand) + 1):
        for j in range(1, len(ref) + 1):
            if cand[i - 1] == ref[j - 1]:
                table[i][j] = table[i - 1][j - 1] + 1
            else:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
    common = table[-1][-1]
    if common == 0:
        return 0.0
    precision, recall = common / len(cand), common / len(ref)
    return 2 * precision * recall / (precision + recall)


# --- workloads ----------------------------------------------------------------------------------


def bench_dtr_f1(sizes: Sizes) -> list[Row]:
    instances, tau = make_dtr_instances(sizes), 0.7

    def ours() -> list[dict[str, float]]:
        return [dtr_f1(predicted, gold, tau) for predicted, gold in instances]

    ours_s, ours_out = timed(ours)
    base_s, base_out = timed(lambda: [baseline_dtr_f1(predicted, gold, tau) for predicted, gold in instances])
    for index, (mine, theirs) in enumerate(zip(ours_out, base_out, strict=True)):
        check(
            (mine["tp"], mine["fp"], mine["fn"]) == theirs,
            "dtr_f1",
            f"instance {index}: ours {mine}, baseline {theirs}",
        )
    size = f"{len(instances):,} inst × {sizes.dtr_labels}×{sizes.dtr_labels} labels"
    return [Row("dtr_f1", "Counter char-F1 + Kuhn matching", size, ours_s, base_s, peak_mb(ours))]


def same_scores(mine: dict[str, float], theirs: dict[str, float]) -> bool:
    return all(math.isclose(mine[key], theirs[key], rel_tol=1e-12, abs_tol=1e-15) for key in ("accuracy", "macro_f1"))


def bench_macro_f1(sizes: Sizes) -> list[Row]:
    labels, preds, golds = make_syndrome_predictions(sizes)
    total, subset = len(golds), sizes.macro_recipe_subset
    size = f"{total:,} preds, {len(labels)} classes"

    def ours() -> dict[str, float]:
        return macro_f1(preds, golds, labels=labels)

    ours_s, ours_out = timed(ours)
    one_pass_s, one_pass_out = timed(lambda: baseline_macro_f1_one_pass(preds, golds, labels))
    check(same_scores(ours_out, one_pass_out), "macro_f1", f"ours {ours_out}, one-pass {one_pass_out}")

    subset_s, subset_out = timed(lambda: baseline_macro_f1_recipe(preds[:subset], golds[:subset], labels), repeat=False)
    subset_ours = macro_f1(preds[:subset], golds[:subset], labels=labels)
    check(
        same_scores(subset_ours, subset_out), "macro_f1", f"first {subset:,}: ours {subset_ours}, recipe {subset_out}"
    )
    estimate_s, note = subset_s * total / subset, ""
    if estimate_s <= RECIPE_BUDGET_S:
        recipe_s, recipe_out = timed(lambda: baseline_macro_f1_recipe(preds, golds, labels), repeat=False)
        check(same_scores(ours_out, recipe_out), "macro_f1", f"ours {ours_out}, recipe {recipe_out}")
    else:
        recipe_s = estimate_s
        note = f"recipe time extrapolated ×{total // subset} from the first {subset:,} predictions"
    memory = peak_mb(ours)
    return [
        Row("macro_f1", "TCM-SD recipe (148 passes)", size, ours_s, recipe_s, memory, note),
        Row("macro_f1", "one-pass dict counts", size, ours_s, one_pass_s, memory),
    ]


def bench_hard_subset(sizes: Sizes) -> list[Row]:
    item_ids, matrix = make_correctness(sizes)
    rows, top_k, lam = matrix.tolist(), sizes.hard_top_k, 0.5

    def ours() -> list[Hashable]:
        return hard_subset(item_ids, matrix, top_k, lam)

    ours_s, ours_out = timed(ours)
    base_s, base_out = timed(lambda: baseline_hard_subset(item_ids, rows, top_k, lam))
    if ours_out != base_out:
        first = next(i for i, (a, b) in enumerate(zip(ours_out, base_out, strict=False)) if a != b)
        check(
            False,
            "hard_subset",
            f"first difference at rank {first}: ours {ours_out[first]}, baseline {base_out[first]}",
        )
    size = f"{len(item_ids):,} items × {sizes.hard_models} models, top {top_k}"
    return [Row("hard_subset", "lists + fsum mean/var + sorted()", size, ours_s, base_s, peak_mb(ours))]


def bench_elo_ratings(sizes: Sizes) -> list[Row]:
    matches, k = make_matches(sizes), 4

    def ours() -> dict[Hashable, float]:
        return elo_ratings(matches, k)

    ours_s, ours_out = timed(ours)
    base_s, base_out = timed(lambda: baseline_elo_ratings(matches, k))
    check(ours_out.keys() == base_out.keys(), "elo_ratings", "different model sets")
    names = sorted(base_out)
    mine, theirs = np.array([ours_out[n] for n in names]), np.array([base_out[n] for n in names])
    check(np.allclose(mine, theirs, rtol=1e-12, atol=1e-9), "elo_ratings", f"max |diff| {np.abs(mine - theirs).max()}")
    size = f"{len(matches):,} matches, {len(names)} models"
    return [Row("elo_ratings", "textbook dict loop", size, ours_s, base_s, peak_mb(ours))]


def bench_rouge_l(sizes: Sizes) -> list[Row]:
    pairs, prefix = make_text_pairs(sizes), sizes.rouge_baseline_pairs

    def ours() -> list[float]:
        return [rouge_l(candidate, reference) for candidate, reference in pairs]

    ours_s, ours_out = timed(ours)
    base_prefix_s, base_out = timed(lambda: [baseline_rouge_l(c, r) for c, r in pairs[:prefix]], repeat=False)
    for index, (mine, theirs) in enumerate(zip(ours_out, base_out, strict=False)):
        check(mine == theirs, "rouge_l", f"pair {index}: ours {mine!r}, baseline {theirs!r}")
    note = f"DP time extrapolated ×{len(pairs) // prefix} from the first {prefix} pairs (scores checked on those)"
    size = f"{len(pairs):,} pairs × {sizes.rouge_tokens} tokens"
    base_s = base_prefix_s * len(pairs) / prefix
    return [Row("rouge_l", "textbook O(n·m) DP table", size, ours_s, base_s, peak_mb(ours), note)]


WORKLOADS: dict[str, Callable[[Sizes], list[Row]]] = {
    "dtr_f1": bench_dtr_f1,
    "macro_f1": bench_macro_f1,
    "hard_subset": bench_hard_subset,
    "elo_ratings": bench_elo_ratings,
    "rouge_l": bench_rouge_l,
}


# --- report -------------------------------------------------------------------------------------


def format_table(rows: Sequence[Row]) -> str:
    """A Markdown table (readable as is in a terminal); '*' marks an extrapolated baseline."""
    header = ["workload", "baseline", "size", "ours (s)", "baseline (s)", "speed-up", "ours peak (MB)"]
    body = []
    for row in rows:
        star = "*" if row.note else ""
        body.append(
            [
                row.workload,
                row.baseline,
                row.size,
                f"{row.ours_s:.4f}",
                f"{row.baseline_s:.3f}{star}",
                f"{row.speedup:,.1f}×",
                f"{row.peak_mb:.1f}",
            ]
        )
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    numeric = range(3, len(header))

    def line(cells: list[str]) -> str:
        return (
            "| "
            + " | ".join(
                c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            )
            + " |"
        )

    rule = "|" + "|".join("-" * (w + 1) + ":" if i in numeric else "-" * (w + 2) for i, w in enumerate(widths)) + "|"
    notes = [f"* {row.workload}: {row.note}" for row in rows if row.note]
    return "\n".join([line(header), rule, *map(line, body), *([""] + notes if notes else [])])


def machine_summary() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.metrics_bench",
        description="Time eval's dtr_f1, macro_f1, hard_subset, elo_ratings and rouge_l against plain "
        "pure-Python baselines on seeded synthetic inputs; exit 1 if any pair of results disagrees.",
    )
    parser.add_argument("--quick", action="store_true", help="shrink every size 10-100x (a smoke run, < 30 s)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows and machine details to PATH as JSON")
    parser.add_argument(
        "--only",
        action="append",
        choices=sorted(WORKLOADS),
        metavar="WORKLOAD",
        help=f"run just this workload (repeatable): {', '.join(WORKLOADS)}",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = QUICK if args.quick else FULL
    chosen = [name for name in WORKLOADS if not args.only or name in args.only]
    machine = machine_summary()
    started, start = datetime.datetime.now().astimezone(), time.perf_counter()
    print(
        f"metrics bench ({'quick' if args.quick else 'full'}) {started:%Y-%m-%d %H:%M %Z}; "
        f"{machine['cpus']} cpus, Python {machine['python']}, numpy {machine['numpy']}, scipy {machine['scipy']}"
    )
    rows: list[Row] = []
    for name in chosen:
        workload_start = time.perf_counter()
        try:
            rows.extend(WORKLOADS[name](sizes))
        except BenchMismatch as exc:
            print(f"FAILED: {exc}", file=sys.stderr)
            return 1
        print(f"  {name}: done in {time.perf_counter() - workload_start:.1f} s", flush=True)
    total_s = time.perf_counter() - start
    print()
    print(format_table(rows))
    print(f"\ntotal {total_s:.1f} s")
    if args.json:
        write_json_report(
            args.json,
            "bench.metrics_bench",
            started,
            quick=args.quick,
            machine=machine,
            total_s=total_s,
            sizes=asdict(sizes),
            rows=[{**asdict(row), "speedup": row.speedup} for row in rows],
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
