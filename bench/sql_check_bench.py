"""Benchmark `eval.objective.sql.check.check_sql` on the 30 MedDBOps items of ../shared/data.

Per item, in one process:

- ``cold self``: the check of the reference against itself with an empty cache (schema parsing,
  synthetic rows, the SQLite build, the reference's run, the "model" run and the comparison);
- ``warm self`` / ``warm perturbed``: the same item again, cached, against the reference itself and
  against a perturbed copy (the first compared literal altered, else the first ``>``/``>=`` flipped,
  else the first ORDER BY reversed) -- what every further model answering the item costs;
- ``baseline``: the reference's SQLite text executed alone on the already-built database
  (a fresh copy, functions registered, outside the timer): the floor a check cannot beat.

Ratios are item times over the same item's baseline (median over items). Warm and baseline times
are the best of ``--repeat`` runs (they are milliseconds); cold is the best of ``--repeat`` runs
each after clearing the cache. The run also reports what the check finds: the share of references
that run, that match themselves, that return rows or change data (informative), and the share of
perturbed copies it rejects. A reference that runs but does not match itself exits 1.

    python -m bench.sql_check_bench
    python -m bench.sql_check_bench --repeat 1 --json sql.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from bench.harness.measure import write_json_report
from eval.objective.sql import check as sql_check
from eval.objective.sql.check import check_sql
from eval.objective.sql.dialect import SqlDialectError, parse_oracle
from eval.objective.sql.extract import find_sql_blocks

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "medbench-agent-95" / "MedDBOps.jsonl"


@dataclass(frozen=True)
class ItemTimes:
    item: str
    outcome: str
    cold_s: float
    warm_self_s: float
    warm_perturbed_s: float | None
    baseline_s: float | None
    perturbed_outcome: str | None
    informative: bool | None


def best_of(repeat: int, run: Callable[[], Any], before: Callable[[], None] = lambda: None) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        before()
        start = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - start)
    return best, result


def perturb(tree: exp.Expression) -> exp.Expression | None:
    """A plausible wrong answer: change the first compared literal, else flip >/>=, else reverse ORDER BY."""
    tree = tree.copy()
    for node in tree.find_all(exp.EQ, exp.In, exp.Like, exp.NEQ):
        literal = next((lit for lit in node.find_all(exp.Literal) if lit.is_string), None)
        if literal is not None:
            literal.replace(exp.Literal.string(literal.this + "_x"))
            return tree
    flips = {exp.GT: exp.GTE, exp.GTE: exp.GT, exp.LT: exp.LTE, exp.LTE: exp.LT}
    for node in tree.find_all(*flips):
        node.replace(flips[type(node)](this=node.this, expression=node.expression))
        return tree
    order = tree.args.get("order")
    if order is not None and order.expressions:
        first = order.expressions[0]
        first.set("desc", not first.args.get("desc"))
        return tree
    return None


def reference_statement(answer: str, block: int, mode: str) -> list[exp.Expression]:
    """The Oracle trees the check ran for the reference: its block's changes, or its first query that parses."""
    statements = find_sql_blocks(answer)[block].statements
    trees = []
    for statement in statements:
        if statement.kind == ("dml" if mode == "state" else "query"):
            try:
                trees.append(parse_oracle(statement.text))
            except SqlDialectError:
                continue
    return trees if mode == "state" else trees[:1]


def baseline_run(question: str, answer: str) -> Callable[[], Any]:
    """Execute the reference's SQLite text alone on the cached database (setup outside the timer)."""
    prepared = sql_check._prepare(question, answer, None, False, 0)
    connection = sql_check._open(prepared.database)
    statements = prepared.reference.sql.split(";\n")

    def run() -> Any:
        return [connection.execute(sql).fetchall() for sql in statements]

    return run


def bench_item(row: dict[str, Any], repeat: int) -> ItemTimes:
    question, answer, item = row["question"], row["answer"], str(row["other"]["id"])
    cold_s, result = best_of(repeat, lambda: check_sql(question, answer, answer), before=sql_check._prepare.cache_clear)
    warm_s, result = best_of(repeat, lambda: check_sql(question, answer, answer))
    if result.outcome == "reference_not_executable":
        return ItemTimes(item, result.outcome, cold_s, warm_s, None, None, None, None)
    trees = reference_statement(answer, result.details["reference_block"], result.details["reference_mode"])
    perturbed_trees = [perturb(trees[0]), *trees[1:]] if trees else []
    warm_perturbed_s, perturbed_outcome = None, None
    if perturbed_trees and perturbed_trees[0] is not None:
        text = "```sql\n" + ";\n".join(t.sql(dialect="oracle") for t in perturbed_trees) + ";\n```"
        warm_perturbed_s, perturbed = best_of(repeat, lambda: check_sql(question, answer, text))
        perturbed_outcome = perturbed.outcome
    baseline_s, _ = best_of(repeat, baseline_run(question, answer))
    return ItemTimes(
        item,
        result.outcome,
        cold_s,
        warm_s,
        warm_perturbed_s,
        baseline_s,
        perturbed_outcome,
        result.details.get("reference_informative"),
    )


def format_table(items: Sequence[ItemTimes]) -> str:
    runnable = [i for i in items if i.baseline_s is not None]
    columns = [
        ("cold self-check", lambda i: i.cold_s),
        ("warm self-check", lambda i: i.warm_self_s),
        ("warm perturbed check", lambda i: i.warm_perturbed_s),
        ("baseline: reference SQL alone", lambda i: i.baseline_s),
    ]
    lines = [
        "| workload | items | median per item (ms) | max (ms) | total (ms) | median ratio to baseline |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, get in columns:
        values = [(get(i), i.baseline_s) for i in runnable if get(i) is not None]
        times = [v for v, _ in values]
        ratio = statistics.median(v / b for v, b in values if b)
        lines.append(
            f"| {name} | {len(times)} | {statistics.median(times) * 1e3:.2f} | {max(times) * 1e3:.2f} | "
            f"{sum(times) * 1e3:.1f} | {ratio:,.1f}× |"
        )
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.sql_check_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help=f"MedDBOps.jsonl (default {DEFAULT_DATA})")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement, best kept (default 3)")
    parser.add_argument("--json", metavar="PATH", help="also write the per-item times and machine details as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not args.data.is_file():
        print(f"error: {args.data} not found; pass --data PATH/TO/MedDBOps.jsonl", file=sys.stderr)
        return 2
    rows = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]
    machine = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "sqlglot": sqlglot.__version__,
    }
    started, start = datetime.datetime.now().astimezone(), time.perf_counter()
    print(
        f"sql_check bench {started:%Y-%m-%d %H:%M %Z}; {len(rows)} items from {args.data.name}; "
        f"{machine['cpus']} cpus, Python {machine['python']}, sqlglot {machine['sqlglot']}, best of {args.repeat}"
    )
    items = [bench_item(row, args.repeat) for row in rows]
    total_s = time.perf_counter() - start
    runnable = [i for i in items if i.outcome != "reference_not_executable"]
    perturbed = [i for i in runnable if i.perturbed_outcome is not None]
    print()
    print(format_table(items))
    print(
        f"\nreferences that run: {len(runnable)}/{len(items)} ({len(runnable) / len(items):.0%}); "
        f"match themselves: {sum(i.outcome == 'match' for i in runnable)}/{len(runnable)}; "
        f"informative (rows returned or data changed): {sum(bool(i.informative) for i in runnable)}/{len(runnable)}"
    )
    print(
        f"perturbed copies rejected: {sum(i.perturbed_outcome != 'match' for i in perturbed)}/{len(perturbed)}; "
        f"not rejected: {[i.item for i in perturbed if i.perturbed_outcome == 'match']}"
    )
    print(f"total {total_s:.1f} s")
    if args.json:
        write_json_report(
            args.json,
            "bench.sql_check_bench",
            started,
            quick=False,
            machine=machine,
            total_s=total_s,
            sizes={"items": len(items), "repeat": args.repeat},
            rows=[asdict(i) for i in items],
        )
    failed = [i.item for i in runnable if i.outcome != "match"]
    if failed:
        print(f"FAILED: references that run but do not match themselves: {failed}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
