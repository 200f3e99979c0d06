"""The pairwise stage: a scored run's ties judged side by side, written into the run folder.

One function for both places it runs — ``python -m pool.pairwise RUN_DIR`` and ``python -m pool.run``
after scoring (``--pairwise`` or the pool file's ``pairwise:`` block) — so the standalone command and
the stage choose, ask, store and report alike. :func:`judge_ties` selects (``pool.pairwise.select``),
asks (``pool.pairwise.judging``: verdicts stored in ``RUN_DIR/pairwise/``, so a repeat or a resume
asks only what has no verdict yet) and writes, beside the score-based files and never mixed into them:

- ``battles.jsonl`` — one row per judge and battle: the two orders' verdicts and the battle
  (``judge.pairwise.battle_outcome``: a win only when both orders agree, else a tie);
- ``pairwise_judged.json`` — ``battles: judged``; per judge its position consistency; per bucket the
  score decision, the judged decision (``routing.decide.judged.judged_decision``) and the judged
  Bradley–Terry ratings and win rates (``routing.boards.judged``); the totals: buckets decisive
  with and without the judged battles, battles and judge calls.

``routing.build`` reads ``battles.jsonl`` again (``routing.boards.judged.read_judged``), so its leaderboard,
manifest and report show the judged decisions of the buckets it builds.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from eval.files import atomic_write_lines, atomic_write_text
from judge.pairwise import PairVerdicts, battle_outcome, position_consistency
from pool.execute.response_cache import ResponseCache
from pool.pairwise.judging import judge_selection, verdict_rows
from pool.pairwise.select import Selection
from routing.boards.judged import BATTLES_FILENAME, JUDGED, JudgedBattle, judged_ratings
from routing.decide.judged import judged_decision

REPORT_FILENAME = "pairwise_judged.json"
T = TypeVar("T")
Runner = Callable[[Coroutine[Any, Any, T]], T]


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


def summary_lines(report: dict[str, Any]) -> list[str]:
    """What the stage did, for a person: ties, battles, calls, decisive buckets, each judge's consistency."""
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
    return lines


def judge_ties(
    selection: Selection, *, cache_dir: str | None = None, no_cache: bool = False, run: Runner[Any] = asyncio.run
) -> dict[str, Any]:
    """Judge the battles of ``selection`` (``pool.pairwise.select.load_selection``) and write both files into
    its run folder (module doc); returns the report.

    ``run`` executes the asking coroutine (``asyncio.run``; a run passes its interruptible runner). Ctrl-C
    raises KeyboardInterrupt (or the runner's CancelledError) with every verdict received kept for the
    next call; nothing is written then."""
    cache = None if no_cache else ResponseCache(cache_dir)
    try:
        verdicts, counts = run(judge_selection(selection, cache))
    finally:
        if cache is not None:
            cache.close()
    run_dir = Path(selection.run_dir)
    atomic_write_lines(
        run_dir / BATTLES_FILENAME, (json.dumps(r, ensure_ascii=False) + "\n" for r in verdict_rows(verdicts))
    )
    report = judged_report(selection, verdicts, counts)
    atomic_write_text(run_dir / REPORT_FILENAME, json.dumps(report, ensure_ascii=False, indent=2) + "\n")
    return report
