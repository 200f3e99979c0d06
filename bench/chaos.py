"""``python -m bench.chaos``: kill ``pool.run`` in every phase, resume, and count what survived.

The long version of ``tests/pool/test_chaos.py``: the FAKE chaos pool (good, weak and hostile models, a
judge, 20% injected faults, a dead endpoint), ``--hallu`` on, ≥ 10 SIGKILLs in each phase
(answering, judging, claim checks, the pairwise stage's side-by-side verdicts, routing build; one while
re-asking short answers) plus SIGTERMs, then a final resume; the artefacts (results, scores, manifest,
judged battles) are compared with an uninterrupted run of the same pool.
A second scenario takes the judge down (its backend unreachable) to check that the judge, not the candidates,
is charged.
Then the table of malformed inputs (``bench/harness/malformed_cases.py``).

Options: ``--kills N`` per phase (default 10), ``--items N`` (default 24), ``--fault-rate``,
``--seed``, ``--json FILE``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import chaos, malformed_cases
from bench.harness.measure import write_json_report


def kill_scenario(work: Path, kills: int, items: int, fault_rate: float, seed: int) -> dict[str, Any]:
    fake, base_url = chaos.start_fake(work, fault_rate)
    try:
        pool = chaos.write_pool(work / "pool.yaml", base_url, chaos.free_port())
        data = chaos.write_suite(work / "suite" / "items.jsonl", items)
        args = [
            *("--pool", str(pool), "--data", str(data), "--hallu", "--max-consecutive-failures", "3"),
            *("--pairwise", "--pairwise-budget", "200"),
        ]
        clean, killed = work / "clean" / "run", work / "killed" / "run"
        chaos.run_clean([*args, "--out", str(clean)], work / "cache-clean")
        report = chaos.run_with_kills(
            [*args, "--out", str(killed)], killed, work / "cache-killed", kills_per_phase=kills, seed=seed, sigterms=2
        )
        outcome = chaos.compare(clean, killed)
        return {"kills": report.kills, "missed": report.missed, **outcome}
    finally:
        fake.terminate()
        fake.wait(10)


def dead_judge_scenario(work: Path, items: int, fault_rate: float) -> dict[str, Any]:
    fake, base_url = chaos.start_fake(work, fault_rate)
    try:
        pool = chaos.write_pool(work / "pool.yaml", base_url, chaos.free_port())
        text = pool.read_text(encoding="utf-8").replace(
            "  - name: judge\n    backend: fake", "  - name: judge\n    backend: dead"
        )
        pool.write_text(text, encoding="utf-8")
        data = chaos.write_suite(work / "suite" / "items.jsonl", items)
        run_dir = work / "run"
        code = chaos.run_clean(["--pool", str(pool), "--data", str(data), "--out", str(run_dir)], work / "cache")
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        infra = {m: e["status"]["infra_error"] for m, e in summary["models"].items()}
        return {"exit": code, "infra_errors_by_model": infra}
    finally:
        fake.terminate()
        fake.wait(10)


def malformed_table(work: Path) -> dict[str, Any]:
    results = []
    for index, case in enumerate(malformed_cases.CASES):
        folder = work / f"case{index}"
        folder.mkdir()
        results.append(malformed_cases.run_case(case, folder))
    return malformed_cases.summary(results)


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.chaos", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kills", type=int, default=10, help="SIGKILLs per phase (default 10)")
    parser.add_argument("--items", type=int, default=24, help="items in the synthetic suite (default 24)")
    parser.add_argument("--fault-rate", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    started = datetime.datetime.now(datetime.UTC)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="medpool-chaos-") as tmp:
        work = Path(tmp)
        (work / "a").mkdir(), (work / "b").mkdir(), (work / "c").mkdir()
        kills = kill_scenario(work / "a", args.kills, args.items, args.fault_rate, args.seed)
        print("kill scenario (clean run vs killed + resumed run):")
        for key, value in kills.items():
            print(f"  {key:26} {value}")
        dead = dead_judge_scenario(work / "b", max(6, args.items // 4), args.fault_rate)
        print("dead judge scenario:")
        print(f"  exit {dead['exit']}; infra errors charged per model: {dead['infra_errors_by_model']}")
        table = malformed_table(work / "c")
        print("malformed inputs:")
        print(json.dumps(table, indent=2, ensure_ascii=False))
    total = time.perf_counter() - t0
    print(f"total {total:.0f} s")
    if args.json:
        write_json_report(
            args.json,
            "bench.chaos",
            started,
            quick=False,
            machine={"python": platform.python_version(), "machine": platform.machine()},
            total_s=total,
            sizes={"items": args.items, "kills_per_phase": args.kills},
            rows=[
                {"scenario": "kills", **kills},
                {"scenario": "dead_judge", **dead},
                {"scenario": "malformed", "table": table},
            ],
        )
    ok = (
        kills["units_lost"] == 0
        and kills["units_duplicated"] == 0
        and kills["judge_rows_by_non_judge"] == 0
        and kills["results_identical"]
        and kills["scores_identical"]
        and kills["manifest_identical"]
        and kills.get("pairwise_identical", True)
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
