"""``python -m pool.pairwise RUN_DIR``: the judge compares the answers of the models a night could not separate.

A finished run's ties (``pool.pairwise.select``: tied models whose intervals overlap in a bucket the
scores left undecided) are judged side by side, both orders, within ``--budget`` judge calls
(``pool.pairwise.judging``; a repeated command asks only what has no verdict yet). Written into
RUN_DIR, beside the score-based files and never mixed into them:

- ``battles.jsonl`` — one row per judge and battle: the two orders' verdicts and the battle
  (``judge.pairwise.battle_outcome``: a win only when both orders agree, else a tie);
- ``pairwise_judged.json`` — ``battles: judged``; per judge its position consistency; per bucket the
  score decision, the judged decision (``routing.decide.judged.judged_decision``) and the judged
  Bradley–Terry ratings and win rates (``routing.boards.judged``); the totals: buckets decisive
  with and without the judged battles, battles and judge calls.

``--dry-run`` prints the ties, the battles and the calls they would cost, and asks nothing.
Exit codes: 0 done; 1 a judge could not be brought up or asked (run it again: answered requests come
from the response cache and the stored verdicts); 2 bad input; 130 interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval.files import atomic_write_lines, atomic_write_text
from judge.pairwise import PairVerdicts, battle_outcome, position_consistency
from pool.execute.executor import leaf_errors
from pool.execute.response_cache import ResponseCache
from pool.pairwise.judging import judge_selection, verdict_rows
from pool.pairwise.select import DEFAULT_BUDGET, Selection, load_selection
from routing.boards.judged import JUDGED, JudgedBattle, judged_ratings
from routing.decide.judged import judged_decision

EXIT_OK, EXIT_INFRA, EXIT_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pool.pairwise", description=__doc__.split("\n\n")[0].strip("`").replace("``", "")
    )
    parser.add_argument("run", help="the folder of a finished run (python -m pool.run --out RUN_DIR)")
    parser.add_argument("--pool", help="judge with this pool file's judge(s) instead of the run's")
    parser.add_argument(
        "--budget",
        type=int,
        help="at most this many judge calls (both orders, every judge; default: the pool file's pairwise_budget, "
        f"else {DEFAULT_BUDGET}); 0: no limit",
    )
    parser.add_argument(
        "--bucket",
        action="append",
        default=[],
        metavar="ID",
        help="judge only the ties of this bucket (e.g. orchestration/skill/routing; repeatable)",
    )
    parser.add_argument("--dry-run", action="store_true", help="print the ties, battles and calls; ask nothing")
    parser.add_argument("--no-cache", action="store_true", help="ask the judge again instead of reusing cached replies")
    parser.add_argument("--cache-dir", help="response cache folder (default: $MEDPOOL_CACHE_DIR or ~/.cache/medpool)")
    return parser


def bucket_battles(selection: Selection, verdicts: Sequence[PairVerdicts]) -> dict[str, list[JudgedBattle]]:
    """Each tied bucket's judged battles (every judge's), from the battles of its pairs."""
    outcome = {
        (v.a, v.b, v.item_id, v.judge): battle_outcome(v.ab, v.ba) for v in verdicts if battle_outcome(v.ab, v.ba)
    }
    judges = sorted({v.judge for v in verdicts})
    out: dict[str, list[JudgedBattle]] = {}
    for pair in selection.pairs:
        for item in pair.items:
            for judge in judges:
                result = outcome.get((pair.a, pair.b, item, judge))
                if result is not None:
                    out.setdefault(pair.bucket, []).append(JudgedBattle(item, pair.a, pair.b, result, judge))
    return out


def judged_report(selection: Selection, verdicts: Sequence[PairVerdicts], counts: dict[str, int]) -> dict[str, Any]:
    """``pairwise_judged.json`` (module doc)."""
    by_bucket = bucket_battles(selection, verdicts)
    buckets = {}
    for bucket_id, route in selection.routes.items():
        if route["decisive"] and bucket_id not in by_bucket:
            continue
        battles = by_bucket.get(bucket_id, [])
        buckets[bucket_id] = {
            "score_decision": {k: route[k] for k in ("leader", "tied_top", "decisive", "chosen_by")},
            "judged_decision": judged_decision(route, battles),
            "ratings": judged_ratings(battles),
        }
    decisive_scores = sum(bool(r["decisive"]) for r in selection.routes.values())
    decisive_judged = decisive_scores + sum(
        1 for b in buckets.values() if b["judged_decision"]["decisive"] and not b["score_decision"]["decisive"]
    )
    return {
        "schema_version": 1,
        "battles": JUDGED,
        "run": str(selection.run_dir),
        "judges": position_consistency(verdicts),
        "totals": {
            **selection.describe(),
            "judged_battles": sum(1 for v in verdicts if battle_outcome(v.ab, v.ba) is not None),
            "ties": sum(1 for v in verdicts if battle_outcome(v.ab, v.ba) == "tie"),
            "calls_made": counts.get("calls", 0),
            "cache_hits": counts.get("cache_hits", 0),
            "decisive_with_scores": decisive_scores,
            "decisive_with_judged_battles": decisive_judged,
        },
        "buckets": buckets,
    }


def _summary(report: dict[str, Any]) -> str:
    t = report["totals"]
    lines = [
        f"pairwise: {t['tied_pairs']} tied pairs in {t['tied_buckets']} undecided buckets; "
        f"{t['battles']} battles judged ({t['judge_calls']} calls planned, {t['calls_made']} made, "
        f"{t['cache_hits']} from the cache), {t['ties']} of them ties",
        f"  decisive buckets: {t['decisive_with_scores']} of {t['routable_buckets']} routable with scores, "
        f"{t['decisive_with_judged_battles']} with judged battles",
    ]
    for judge, c in report["judges"].items():
        lines.append(
            f"  {judge}: position consistency {c['consistent']} over {c['pairs']} pairs; "
            f"first position picked in {c['first_position']} of {c['verdicts']} non-tie verdicts"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    run_dir = Path(args.run)
    if args.budget is not None and args.budget < 0:
        print("error: --budget must be ≥ 0 (0: no limit)", file=sys.stderr)
        return EXIT_INPUT
    try:
        selection = load_selection(run_dir, args.budget, args.pool, buckets=args.bucket)
    except (ValueError, OSError) as exc:  # a missing run, a damaged store, a pool without a judge
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    if args.dry_run:
        print(json.dumps(selection.describe(), ensure_ascii=False, indent=2))
        return EXIT_OK
    cache = None if args.no_cache else ResponseCache(args.cache_dir)
    try:
        verdicts, counts = asyncio.run(judge_selection(selection, cache))
    except KeyboardInterrupt:
        print("interrupted; the verdicts given so far are stored: run the command again", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 (a judge that never came up: say so, exit 1)
        for leaf in leaf_errors(exc):
            print(f"error: {type(leaf).__name__}: {leaf}", file=sys.stderr)
        return EXIT_INFRA
    finally:
        if cache is not None:
            cache.close()
    atomic_write_lines(
        run_dir / "battles.jsonl", (json.dumps(r, ensure_ascii=False) + "\n" for r in verdict_rows(verdicts))
    )
    report = judged_report(selection, verdicts, counts)
    atomic_write_text(run_dir / "pairwise_judged.json", json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    print(_summary(report))
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
