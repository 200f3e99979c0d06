"""Are the routing decisions statistically sound? Simulated runs with known strengths, pushed through
the code ``routing.build`` runs (``build_buckets`` → ``bucket_route`` / ``orchestrator``).

Every simulated bucket is one task of one in-memory ScoreTable (exam family, pass/fail scores unless
said otherwise), so thousands of independent simulations cost one ``build_buckets`` call. A model
answers the first ``n`` items of its bucket, so a 5-item model's items are among a 100-item model's.
Latencies are drawn per row, so a cell's median latency is random (ties cannot hide behind it).

Outcomes: item i of model m is correct with probability ``p_m`` (independent items), or, with shared
difficulty, Φ(μ_m + σ·z_i) with z_i ~ N(0, 1) drawn once per item and μ_m = Φ⁻¹(p_m)·√(1 + σ²), so
the marginal rate is still p_m but models find the same items hard (σ = ``SHARED_SD``).

Rates (each over ``--sims`` simulated buckets, seeded):

- false single winner: two equally good models (p = 0.85), and the bucket is ``decisive``;
- power: 0.8 vs 0.5, and the bucket is decisive for the better model;
- CI coverage: share of the primary-score CIs (pass/fail cells) that contain the true p, and share of
  zero-width CIs;
- name ties: among undecided buckets of two equal models with equal latency, the share whose
  first ``tied_top`` entry is the alphabetically first name (a tie decided by name sits near 100%);
- judged buckets: two models whose answers truly pass 0.8 vs 0.6 of the time (n = 30), seen through
  LLM judges that report the truth with a known accuracy, independently: one 75% judge, a panel of
  three 75% judges (majority, ``judge.panel``), and a 0.90 / 0.65 / 0.60 panel (majority and the
  ``reliability`` rule, member reliabilities estimated from each simulated night's votes alone);
  the rate at which the better model is decided winner, and the false-winner rate of equal models
  (0.7 vs 0.7) under the three-judge panel;
- orchestrator: a model with routing 0.95, capability 0.95 and tool decision 0.2 against one at
  0.7 everywhere; the share of simulations that nominate the lopsided model.

    python -m bench.validity               # 1,000 simulations per row, ~1-2 min on 2 cores
    python -m bench.validity --quick       # 200 per row
    python -m bench.validity --json out.json
"""

from __future__ import annotations

import argparse
import datetime
import inspect
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy
from scipy.special import ndtr, ndtri

from bench.harness.measure import write_json_report
from judge.panel import MemberVerdict, aggregate, estimate_reliability
from routing.boards.hard import hard_recovery_simulation
from routing.boards.leaderboard import Bucket, build_buckets
from routing.decide.manifest import bucket_route, orchestrator
from routing.load.table import ModelIdentity, ScoreTable, intern, make_entrants

SHARED_SD = 1.5
MIN_N, TOP_K = 5, 3
COVERAGE_N = (5, 10, 30, 100)
COVERAGE_P = (0.5, 0.7, 0.85, 0.95)
JUDGE_SD = 1.5  # judge-like continuous scores: 4 rubric dimensions ~ round(N(10p, JUDGE_SD)) on 0..10, total / 40


@dataclass(frozen=True)
class Entrant:
    """One model in every simulated bucket: true rate ``p``, ``n`` answered items, ``dead`` = all infra errors."""

    model: str
    p: float
    n: int
    dead: bool = False
    latency: float | None = None  # fixed latency (s); None: drawn per row from U(0.5, 3)


@dataclass
class Columns:
    """ScoreTable columns under construction (one row per model × item)."""

    entrant: list[np.ndarray]
    item: list[np.ndarray]
    family: list[str]  # per row (expanded at the end)
    task: list[str]
    gold: list[str]
    value: list[np.ndarray]
    status: list[np.ndarray]
    latency: list[np.ndarray]


def _rows(
    cols: Columns,
    models: Sequence[str],
    entrants: Sequence[Entrant],
    outcomes: np.ndarray,
    item0: int,
    family: str,
    task: str,
    gold: str,
    rng: np.random.Generator,
) -> int:
    """Append one bucket's rows (outcomes: models × items, each model's first n used); returns the next item code."""
    for e, row in zip(entrants, outcomes, strict=True):
        k = e.n
        cols.entrant.append(np.full(k, models.index(e.model), dtype=np.int32))
        cols.item.append(np.arange(item0, item0 + k, dtype=np.int32))
        cols.family += [family] * k
        cols.task += [task] * k
        cols.gold += [gold] * k
        cols.status.append(np.full(k, 1 if e.dead else 0, dtype=np.int8))
        cols.value.append(np.where(e.dead, np.nan, row[:k]))
        cols.latency.append(np.full(k, e.latency) if e.latency is not None else rng.uniform(0.5, 3.0, k))
    return item0 + max(e.n for e in entrants)


def _table(cols: Columns, models: Sequence[str], n_items: int) -> ScoreTable:
    entrant, item = np.concatenate(cols.entrant), np.concatenate(cols.item)
    value, status = np.concatenate(cols.value), np.concatenate(cols.status)
    family, fam_vocab = intern(cols.family)
    task, task_vocab = intern(cols.task)
    gold, gold_vocab = intern(cols.gold)
    n = len(entrant)
    none, none_vocab = intern(["(none)"] * n)
    binary = np.isin(value, (0.0, 1.0))
    return ScoreTable(
        entrants=tuple(
            make_entrants([(ModelIdentity.from_record({"name": m, "backend": "sim"}), None) for m in models])
        ),
        items=tuple(f"sim/{i}" for i in range(n_items)),
        vocab={
            "family": fam_vocab,
            "task": task_vocab,
            "domain": none_vocab,
            "system": none_vocab,
            "gold_type": gold_vocab,
            "suite": ("sim",),
        },
        entrant=entrant,
        item=item,
        family=family,
        task=task,
        domain=none,
        system=none,
        gold_type=gold,
        suite=np.zeros(n, dtype=np.int32),
        status=status,
        value=value,
        passed=np.where(status == 0, np.where(binary, value, (value >= 0.5).astype(float)), np.nan),
        latency_s=np.concatenate(cols.latency),
        completion_tokens=np.full(n, 100.0),
        run=np.zeros(n, dtype=np.int16),
        metrics={},
        flags={},
        labels={},
    )


def outcomes(entrants: Sequence[Entrant], n_items: int, rng: np.random.Generator, shared_sd: float = 0.0) -> np.ndarray:
    """models × items pass/fail draws: independent (shared_sd = 0) or with a shared item difficulty."""
    p = np.array([e.p for e in entrants])[:, None]
    if shared_sd > 0:
        z = rng.standard_normal(n_items)[None, :]
        p = ndtr(ndtri(p) * np.sqrt(1 + shared_sd**2) + shared_sd * z)
    return (rng.random((len(entrants), n_items)) < p).astype(float)


def judge_scores(entrants: Sequence[Entrant], n_items: int, rng: np.random.Generator) -> np.ndarray:
    """models × items judge-like continuous scores in [0, 1] (rubric total / 40), mean ≈ p."""
    p = np.array([e.p for e in entrants])[:, None, None]
    dims = np.clip(np.round(rng.normal(10 * p, JUDGE_SD, size=(len(entrants), n_items, 4))), 0, 10)
    return dims.sum(axis=2) / 40


def judged(truth: np.ndarray, accuracies: Sequence[float], rule: str, rng: np.random.Generator) -> np.ndarray:
    """The verdicts a judge (one accuracy) or panel gives pass/fail answers whose truth is ``truth``
    (models × items): each judge reports the truth with its accuracy, independently; a panel's
    verdicts are ``judge.panel.aggregate`` of its members' under ``rule`` (reliability: estimated
    from these votes alone, as a run estimates it from its own)."""
    flat = truth.reshape(-1).astype(bool)
    right = rng.random((len(flat), len(accuracies))) < np.asarray(accuracies)
    votes = np.where(right, flat[:, None], ~flat[:, None]).astype(float)
    if len(accuracies) == 1:
        return votes[:, 0].reshape(truth.shape)
    reliability = estimate_reliability(votes) if rule == "reliability" else None
    verdicts = [aggregate([MemberVerdict(bool(v)) for v in row], rule, reliability).passed for row in votes]
    return np.array(verdicts, dtype=float).reshape(truth.shape)


def simulate(
    entrants: Sequence[Entrant],
    sims: int,
    seed: int,
    shared_sd: float = 0.0,
    kind: str = "binary",
    rounds: int = 1000,
    judges: Sequence[float] = (),
    rule: str = "majority",
) -> list[Bucket]:
    """``sims`` independent buckets (exam tasks) with these entrants; their leaderboard buckets, in
    simulation order. ``judges``: the binary outcomes are seen through judges of these accuracies."""
    rng = np.random.default_rng(seed)
    models = sorted({e.model for e in entrants})
    cols = Columns([], [], [], [], [], [], [], [])
    n_items, item0 = max(e.n for e in entrants), 0

    def draw() -> np.ndarray:
        return judge_scores(entrants, n_items, rng) if kind == "judge" else outcomes(entrants, n_items, rng, shared_sd)

    # Judged: every simulated bucket is judged in one night, as a run judges all of its buckets together.
    nights = list(judged(np.stack([draw() for _ in range(sims)]), judges, rule, rng)) if judges else None
    for s in range(sims):
        draws = nights[s] if nights is not None else draw()
        item0 = _rows(
            cols,
            models,
            entrants,
            draws,
            item0,
            "exam",
            f"sim{s:05d}",
            "cloze" if kind == "judge" else "single_choice",
            rng,
        )
    buckets = build_buckets(_table(cols, models, item0), rounds=rounds, seed=seed)
    return sorted(buckets, key=lambda b: b.name)


def routes(buckets: Sequence[Bucket], **kw: Any) -> list[dict[str, Any]]:
    return [bucket_route(b, MIN_N, TOP_K, None, **kw) for b in buckets]


def sole_winner_rate(buckets: Sequence[Bucket], model: str | None = None) -> float:
    """Share of buckets that are decisive (for ``model``, when given)."""
    hits = [r["decisive"] and r["routable"] and (model is None or r["tied_top"] == [model]) for r in routes(buckets)]
    return float(np.mean(hits))


def coverage(buckets: Sequence[Bucket], truth: dict[str, float]) -> tuple[float, float]:
    """(share of primary CIs containing the true value, share of zero-width CIs) over every cell."""
    covered, zero = [], []
    for bucket in buckets:
        for cell in bucket.cells:
            lo, hi = bucket.ci_of(cell)
            covered.append(lo <= truth[cell.entrant.model_label] <= hi)
            zero.append(hi - lo <= 0)
    return float(np.mean(covered)), float(np.mean(zero))


def name_tie_share(buckets: Sequence[Bucket]) -> tuple[float, int]:
    """Among undecided buckets, the share whose first tied_top entry is the alphabetically first model."""
    ties = [r for r in routes(buckets) if r["routable"] and not r["decisive"]]
    first = [r["tied_top"][0] == min(r["tied_top"]) for r in ties]
    return (float(np.mean(first)) if first else float("nan")), len(ties)


def orchestrator_sims(sims: int, seed: int, n: int = 30, rounds: int = 1000) -> float:
    """Share of simulations in which the lopsided model (tool decision 0.2) is the nominated orchestrator."""
    rng = np.random.default_rng(seed)
    strengths = {
        "balanced": {"routing": 0.7, "tool_decision": 0.7, "MedCallAPI": 0.7},
        "lopsided": {"routing": 0.95, "tool_decision": 0.2, "MedCallAPI": 0.95},
    }
    models = sorted(strengths)
    hits = 0
    accepts_floor = "component_floor" in inspect.signature(orchestrator).parameters
    for s in range(sims):
        cols = Columns([], [], [], [], [], [], [], [])
        item0 = 0
        for task, family, gold in (
            ("specialty_routing", "orchestration", "routing"),
            ("tool_decision", "orchestration", "tool_decision"),
            ("MedCallAPI", "capability", "reference"),
        ):
            key = gold if family == "orchestration" else task
            entrants = [Entrant(m, strengths[m][key], n) for m in models]
            draws = judge_scores(entrants, n, rng) if family == "capability" else outcomes(entrants, n, rng)
            item0 = _rows(cols, models, entrants, draws, item0, family, task, gold, rng)
        buckets = build_buckets(_table(cols, models, item0), rounds=rounds, seed=seed + s)
        result = orchestrator(buckets, MIN_N, ("MedCallAPI",), **({"component_floor": 0.5} if accepts_floor else {}))
        hits += result["model"] == "lopsided"
    return hits / sims


def run(sims: int, seed: int, rounds: int) -> list[dict[str, Any]]:
    """Every row of the table: [{group, case, target, value, note}]."""
    rows: list[dict[str, Any]] = []

    def add(group: str, case: str, target: str, value: float, note: str = "") -> None:
        rows.append({"group": group, "case": case, "target": target, "value": value, "note": note})
        print(f"  {group:<20} {case:<52} {value:7.1%}  {target}", file=sys.stderr, flush=True)

    equal = [Entrant("model_a", 0.85, 30), Entrant("model_b", 0.85, 30)]
    add(
        "false winner",
        "equal models p=0.85, n=30/30",
        "≤ 5%",
        sole_winner_rate(simulate(equal, sims, seed, rounds=rounds)),
    )
    equal100 = [Entrant("model_a", 0.85, 100), Entrant("model_b", 0.85, 100)]
    add(
        "false winner",
        "equal models p=0.85, n=100/100, shared difficulty",
        "≤ 5%",
        sole_winner_rate(simulate(equal100, sims, seed + 1, SHARED_SD, rounds=rounds)),
    )
    unequal = [Entrant("model_a", 0.85, 5), Entrant("model_b", 0.85, 100)]
    buckets = simulate(unequal, sims, seed + 2, rounds=rounds)
    add("false winner", "equal models p=0.85, n=5/100", "≤ 5%", sole_winner_rate(buckets))
    add("false winner", "  …the 5-item model named sole winner", "≤ 5%", sole_winner_rate(buckets, "model_a"))
    worse = [Entrant("model_a", 0.7, 5), Entrant("model_b", 0.85, 100)]
    add(
        "false winner",
        "worse 5-item model (0.7) sole winner over 0.85/100",
        "≤ 5%",
        sole_winner_rate(simulate(worse, sims, seed + 3, rounds=rounds), "model_a"),
    )
    judge_equal = [Entrant("model_a", 0.8, 30), Entrant("model_b", 0.8, 30)]
    add(
        "false winner",
        "equal models, judge-like scores 0.8, n=30/30",
        "≤ 5%",
        sole_winner_rate(simulate(judge_equal, sims, seed + 4, kind="judge", rounds=rounds)),
    )
    for shared in (0.0, SHARED_SD):
        for n in (10, 30, 100):
            strong = [Entrant("model_a", 0.5, n), Entrant("model_b", 0.8, n)]
            label = "shared difficulty" if shared else "independent"
            target = "≥ 67.5% (two-sample 5% test)" if n == 30 and not shared else ("≥ independent" if shared else "")
            add(
                "power",
                f"0.8 vs 0.5, n={n}, {label}",
                target,
                sole_winner_rate(simulate(strong, sims, seed + 10 + n + int(shared), shared, rounds=rounds), "model_b"),
            )
    judge_strong = [Entrant("model_a", 0.7, 30), Entrant("model_b", 0.75, 30)]
    add(
        "power",
        "judge-like 0.75 vs 0.7, n=30",
        "",
        sole_winner_rate(simulate(judge_strong, sims, seed + 5, kind="judge", rounds=rounds), "model_b"),
    )
    for n in COVERAGE_N:
        for p in COVERAGE_P:
            cells = [Entrant("model_a", p, n)]
            cov, zero = coverage(simulate(cells, sims, seed + 100 + n + int(100 * p), rounds=rounds), {"model_a": p})
            add("CI coverage", f"pass/fail n={n}, p={p}", "≥ 92.5%", cov, f"zero-width {zero:.1%}")
    for n in (5, 30):
        for p in (0.5, 0.95):
            cells = [Entrant("model_a", p, n)]
            truth = float(judge_scores(cells, 400_000, np.random.default_rng(7)).mean())
            cov, zero = coverage(
                simulate(cells, sims, seed + 200 + n + int(100 * p), kind="judge", rounds=rounds), {"model_a": truth}
            )
            add("CI coverage", f"judge-like n={n}, p={p} (mean {truth:.3f})", "≥ 92.5%", cov, f"zero-width {zero:.1%}")
    same = [Entrant("model_a", 0.85, 30, latency=1.0), Entrant("model_b", 0.85, 30, latency=1.0)]
    share, ties = name_tie_share(simulate(same, sims, seed + 6, rounds=rounds))
    add("ties", "equal models, equal latency: tie led by first name", "≈ 50%", share, f"{ties} undecided buckets")
    specialists = [Entrant("model_a", 0.6, 30), Entrant("model_b", 0.8, 30)]
    for label, accuracies, rule in (
        ("the truth itself (a perfect judge)", (1.0,), "majority"),
        ("one 75% judge", (0.75,), "majority"),
        ("panel of three 75% judges, majority", (0.75,) * 3, "majority"),
        ("panel 0.90/0.65/0.60, majority", (0.9, 0.65, 0.6), "majority"),
        ("panel 0.90/0.65/0.60, reliability", (0.9, 0.65, 0.6), "reliability"),
    ):
        add(
            "judged buckets",
            f"0.8 vs 0.6, n=30, {label}",
            "panel > one judge" if "three" in label else "",
            sole_winner_rate(
                simulate(specialists, sims, seed + 400, rounds=rounds, judges=accuracies, rule=rule), "model_b"
            ),
        )
    judged_equal = [Entrant("model_a", 0.7, 30), Entrant("model_b", 0.7, 30)]
    add(
        "judged buckets",
        "equal 0.7 vs 0.7, n=30, panel of three 75% judges",
        "≤ 5%",
        sole_winner_rate(simulate(judged_equal, sims, seed + 401, rounds=rounds, judges=(0.75,) * 3)),
    )
    add(
        "orchestrator",
        "lopsided (tool decision 0.2) nominated",
        "0%",
        orchestrator_sims(max(sims // 5, 20), seed + 7, rounds=rounds),
    )
    recovery = [hard_recovery_simulation(seed + 300 + i, n_items=400, n_models=6) for i in range(20)]
    for kind in ("continuous", "pass_fail"):
        values = [r[f"precision_{kind}"] for r in recovery]
        add(
            "hard items",
            f"truly hardest 25% recovered, {kind.replace('_', '/')} scores (400×6)",
            f"chance {recovery[0]['chance']:.0%}",
            float(np.mean(values)),
            f"lowest {min(values):.1%} over 20 seeds",
        )
    return rows


def render(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["| group | case | target | rate | note |", "|---|---|---|---:|---|"]
    lines += [f"| {r['group']} | {r['case'].strip()} | {r['target']} | {r['value']:.1%} | {r['note']} |" for r in rows]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.validity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=1000, help="simulated buckets per row (default 1000)")
    parser.add_argument("--quick", action="store_true", help="200 simulations per row")
    parser.add_argument("--seed", type=int, default=0, help="seed of every simulation (default 0)")
    parser.add_argument(
        "--bootstrap", type=int, default=1000, help="bootstrap resamples per bucket, as routing.build (default 1000)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows and machine details as JSON")
    args = parser.parse_args(argv)
    sims = 200 if args.quick else args.sims
    if sims < 20:
        parser.error("--sims must be >= 20")
    started, start = datetime.datetime.now(datetime.UTC), time.perf_counter()
    rows = run(sims, args.seed, args.bootstrap)
    total = time.perf_counter() - start
    print(f"bench.validity: {sims} simulations per row, seed {args.seed}, {args.bootstrap} resamples, {total:.1f} s")
    print(render(rows))
    if args.json:
        machine = {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "cores": __import__("os").cpu_count(),
        }
        write_json_report(
            args.json,
            "bench.validity",
            started,
            quick=args.quick,
            machine=machine,
            total_s=total,
            sizes={"sims": sims, "bootstrap": args.bootstrap},
            rows=rows,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
