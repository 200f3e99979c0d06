"""``python -m routing.build --run RUN_DIR [RUN_DIR ...]``: scores in, leaderboards, ratings, hard
subset, routing manifest and report out.

Reads ``scores.jsonl`` and ``summary.json`` of each run (see :mod:`routing.load.runs`), and the judged
battles of a pairwise stage where a run has them (``battles.jsonl``, :mod:`routing.decide.judged`: shown
beside the score decisions, never mixed), and writes, into
the first run directory or ``--out``: ``leaderboard.json``, ``leaderboard.md``, ``pairwise.json``,
``hard.yaml``, ``routing_manifest.yaml`` (schema: :mod:`routing.decide.manifest`) and ``report.html``.
Each file is written atomically (temp file, fsync, rename).

Exit codes: 0 success; 2 bad input (a missing or broken run file, named ``path:line``; bad options).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from eval.files import FolderError, atomic_write_text, make_folder, write_failed
from judge.calibration.store import default_store_dir
from routing.bank.estimates import mark_leaderboard, mark_manifest, read_estimates
from routing.boards.freshness import flag_stale_gold
from routing.boards.frontier import cost_frontier
from routing.boards.hard import DEFAULT_FRACTION, DEFAULT_MIN_ITEMS, build_hard
from routing.boards.hard import SCHEMA_VERSION as HARD_SCHEMA_VERSION
from routing.boards.judged import read_judged
from routing.boards.leaderboard import build_buckets
from routing.boards.live import live_block
from routing.boards.pairwise import PairwiseOptions, build_pairwise
from routing.cli_types import NON_NEGATIVE, OPEN_FRACTION, UNIT_INTERVAL, integer
from routing.decide.judged import judged_board, mark_judged
from routing.decide.manifest import ORCHESTRATION_TASKS, build_manifest, dump_yaml
from routing.decide.validation import DEFAULT_K, cross_validate, manifest_decider
from routing.judges.objective import check_agreement, decision_recognition
from routing.judges.reliability import build_reliability
from routing.load.freshness import find_freshness
from routing.load.runs import Loaded, LoadError, load_runs
from routing.load.table import INFRA_ERROR, common_items
from routing.load.verdicts import JudgedColumns
from routing.report.markdown import render_markdown
from routing.report.page import render_report
from routing.serve.validation import end_to_end_row
from routing.stats.forked import Forked, worth_forking

EXIT_OK, EXIT_WRITE, EXIT_INPUT = 0, 1, 2
OUTPUTS = ("leaderboard.json", "leaderboard.md", "pairwise.json", "hard.yaml", "routing_manifest.yaml", "report.html")


@dataclass(frozen=True)
class BuildOptions:
    common: bool = False
    since: str | None = None
    min_n: int = 5
    top_k: int = 3
    floor: float | None = None
    alpha: float = 0.05  # level of the paired tests behind tied_top / decisive (Holm-adjusted)
    component_floor: float = 0.5  # every orchestrator component must reach it to be nominated
    lam: float = 0.5
    hard_fraction: float = DEFAULT_FRACTION
    hard_min: int = DEFAULT_MIN_ITEMS
    hard_n: int | None = None
    seed: int = 0
    bootstrap: int = 1000
    bt_rounds: int = 100
    elo_rounds: int = 50
    elo_k: float = 16.0
    elo_max_battles: int = 4_000
    orchestration_tasks: tuple[str, ...] = field(default=ORCHESTRATION_TASKS)
    cv_folds: int = DEFAULT_K  # routing validation folds; 0 skips it

    def parameters(self) -> dict[str, Any]:
        params = asdict(self)
        params["orchestration_tasks"] = list(self.orchestration_tasks)
        params["ci_level"] = 0.95
        return params


def infra_by_model(loaded: Loaded) -> dict[str, dict[str, int]]:
    """Infra-error rows per entrant label and family."""
    table = loaded.table
    out: dict[str, dict[str, int]] = {}
    for row in np.flatnonzero(table.status == INFRA_ERROR):
        per = out.setdefault(table.entrants[table.entrant[row]].label, {})
        family = table.names("family")[table.family[row]]
        per[family] = per.get(family, 0) + 1
    for entrant in table.entrants:
        out.setdefault(entrant.label, {})
    return out


def _validation(loaded: Loaded, keep: np.ndarray, params: dict[str, Any], options: BuildOptions) -> dict[str, Any]:
    """The manifest's ``validation`` block: routes by k-fold cross-validation, and end to end
    through the served classifier."""
    decide = manifest_decider(loaded.table, params, rounds=options.bootstrap, seed=options.seed)
    out = cross_validate(
        loaded.table, keep, decide, k=options.cv_folds, seed=options.seed, rounds=options.bootstrap, min_n=options.min_n
    )
    out["end_to_end"] = end_to_end_row(
        loaded, keep, params, k=options.cv_folds, seed=options.seed, rounds=options.bootstrap
    )
    return out


def build(
    run_dirs: Sequence[Path | str],
    out_dir: Path | str | None = None,
    options: BuildOptions | None = None,
    calibration_dir: Path | str | None = None,
    freshness: Path | str | None = None,
) -> dict[str, Any]:
    """Run the whole aggregation and write the six files; returns a summary for printing.

    ``calibration_dir``: the judge calibration store (default: ``judge.calibration.store.default_store_dir()``).
    ``freshness``: a gold freshness audit (default: the first run folder's ``freshness.json``, when present).
    """
    options = options or BuildOptions()
    loaded = load_runs(run_dirs, since=options.since)
    table = loaded.table
    keep, left_out = common_items(table) if options.common else (np.ones(len(table), dtype=bool), [])
    generated_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    params = options.parameters()
    runs = [
        {
            "run_id": r.run_id,
            "dir": r.dir,
            "created_at": r.created_at,
            "pool_fingerprint": r.pool_fingerprint,
            "data_fingerprint": r.data_fingerprint,
        }
        for r in loaded.runs
    ]
    header = {"generated_at": generated_at, "runs": runs, "parameters": params}

    # first, while the judged verdicts are loaded: nothing after reliability reads them, and a night of
    # 10^7 rows holds ~240 MB of them, dropped before the leaderboard's buckets are built
    reliability = build_reliability(loaded, calibration_dir if calibration_dir is not None else default_store_dir())
    loaded = replace(loaded, judged=JudgedColumns.empty())
    buckets = build_buckets(table, keep, rounds=options.bootstrap, seed=options.seed)
    # the pairwise stage's judged battles decide the buckets the scores left tied, kept apart (routing.decide.judged)
    verdicts, judged_boards = read_judged(run_dirs), []

    def judge_ties(routes: dict[str, dict[str, Any]]) -> None:
        judged_boards.append(judged_board(buckets, table, routes, verdicts, options.alpha))
        mark_judged(routes, judged_boards[0])

    manifest = build_manifest(table, buckets, loaded.runs, params, generated_at, break_ties=judge_ties)
    judged = judged_boards[0]
    beside = bool(options.cv_folds) and worth_forking(len(table))  # beside the pairwise ratings, on a second CPU
    with Forked(
        lambda: _validation(loaded, keep, params, options), beside=beside, what="routing validation"
    ) as validation:
        if options.cv_folds:
            manifest["validation"] = {}  # its place in the manifest, filled in below
        manifest.update(kept_apart=list(loaded.kept_apart), common_left_out=left_out)
        leaderboard = {
            "schema_version": 1,
            **header,
            "skipped_runs": list(loaded.skipped_runs),
            "superseded_rows": loaded.superseded,
            "models": manifest["models"],
            "families": {},
            "cost_frontier": cost_frontier(table, keep),
        }
        for bucket in buckets:
            leaderboard["families"].setdefault(bucket.family, []).append(bucket.to_json())
        if (live := live_block(table)) is not None:  # what the live family's scores are: agreement, not truth
            leaderboard["live"] = live
        if judged is not None:
            leaderboard["judged_battles"] = judged
        leaderboard["checks"] = check_agreement(table, buckets, keep)
        leaderboard["decision_recognition"] = decision_recognition(table, keep)
        leaderboard["judge_reliability"] = manifest["judge_reliability"] = reliability
        leaderboard["judge_panel"] = reliability["judge_panel"]
        if (audit := find_freshness(list(run_dirs), freshness)) is not None:  # items kept; their buckets flagged
            leaderboard["gold_freshness"] = flag_stale_gold(table, buckets, audit, leaderboard["families"])
        pair_options = PairwiseOptions(
            bt_rounds=options.bt_rounds,
            elo_rounds=options.elo_rounds,
            elo_k=options.elo_k,
            elo_max_battles=options.elo_max_battles,
            seed=options.seed,
        )
        pairwise = {"schema_version": 1, **header, "scopes": build_pairwise(table, buckets, keep, pair_options)}
        hard = {
            "schema_version": HARD_SCHEMA_VERSION,
            "kind": "medpool-hard-subset",
            **header,
            "data_fingerprints": manifest["data_fingerprints"],
            **build_hard(
                table,
                keep,
                lam=options.lam,
                fraction=options.hard_fraction,
                min_items=options.hard_min,
                cap=options.hard_n,
            ),
        }
        infra = infra_by_model(loaded)
        if options.cv_folds:
            manifest["validation"] = validation.result()

    estimates = read_estimates(run_dirs)  # models scored adaptively: marked, never a decision's pick
    mark_leaderboard(leaderboard, estimates)
    mark_manifest(manifest, estimates)
    target = Path(out_dir) if out_dir is not None else Path(run_dirs[0])
    make_folder(target, "--out")
    texts = {
        "leaderboard.json": json.dumps(leaderboard, indent=1, ensure_ascii=False) + "\n",
        "leaderboard.md": render_markdown(leaderboard, hard, manifest),
        "pairwise.json": json.dumps(pairwise, indent=1, ensure_ascii=False) + "\n",
        "hard.yaml": dump_yaml(hard),
        "routing_manifest.yaml": dump_yaml(manifest),
        "report.html": render_report(leaderboard, pairwise, hard, manifest, infra),
    }
    for name in OUTPUTS:
        atomic_write_text(target / name, texts[name])
    routes = manifest["buckets"].values()
    return {
        "out": str(target),
        "runs": len(loaded.runs),
        "models": len(manifest["models"]),
        "rows": len(table),
        "infra_errors": int((table.status == INFRA_ERROR).sum()),
        "buckets": len(buckets),
        "routable": sum(r["routable"] for r in routes),
        "decisive": sum(r["routable"] and r["decisive"] for r in routes),
        "insufficient": sum(r["insufficient_data"] for r in routes),
        "hard_items": len(hard["item_ids"]),
        "default": manifest["default"]["model"],
        "orchestrator": manifest["orchestrator"]["model"],
        "kept_apart": len(loaded.kept_apart),
        "common_left_out": left_out,
        "judge_warnings": [w["message"] for w in reliability["warnings"]] + (judged or {}).get("warnings", []),
        "judged_decisive": sum(r.get("chosen_by") == "judged_battles" for r in routes),
        "stale_gold_items": leaderboard.get("gold_freshness", {}).get("flagged_items"),
    }


def _cv_folds(text: str) -> int:
    value = int(text)
    if value == 1 or value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 (skip) or >= 2, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m routing.build",
        description="Aggregate scored runs into leaderboards (95%% bootstrap CIs), pairwise ratings, a hard subset, "
        "the routing manifest and an HTML report.",
        epilog=f"Writes {', '.join(OUTPUTS)}. "
        "Exit codes: 0 success; 2 bad input (missing/broken run file, bad option).",
    )
    add = parser.add_argument
    add(
        "--run",
        nargs="+",
        required=True,
        metavar="RUN_DIR",
        help="run directories holding scores.jsonl and summary.json",
    )
    add("--out", metavar="DIR", help="output directory (default: the first --run directory)")
    add("--common", action="store_true", help="per task, keep only items every compared model scored")
    add("--since", metavar="ISO", help="ignore runs created before this time (e.g. 2026-11-01T00:00:00Z)")
    add(
        "--min-n",
        type=integer(1),
        default=5,
        help="scored items a model needs in a bucket to be routed there (default 5)",
    )
    add("--top-k", type=integer(1), default=3, help="candidates listed per bucket (default 3)")
    add("--floor", type=float, help="minimum score a model needs to be routed a bucket (default: none)")
    add(
        "--alpha",
        type=OPEN_FRACTION,
        default=0.05,
        help="level of the paired tests (vs each bucket's leader, Holm-adjusted) that make a winner decisive "
        "(default %(default)s)",
    )
    add(
        "--component-floor",
        type=UNIT_INTERVAL,
        default=0.5,
        help="orchestrator: every component (routing, tool decision, capability) must reach this to be nominated "
        "(default %(default)s)",
    )
    add("--lam", type=NON_NEGATIVE, default=0.5, help="variance weight λ in D = (1 - mean) + λ·variance (default 0.5)")
    add(
        "--hard-fraction",
        type=OPEN_FRACTION,
        default=DEFAULT_FRACTION,
        help="share of each (family, task) in the hard subset, in (0, 1) (default %(default)s)",
    )
    add(
        "--hard-min",
        type=integer(0),
        default=DEFAULT_MIN_ITEMS,
        help="hard items per (family, task) at least, but never more than half of it (default %(default)s)",
    )
    add("--hard-n", type=integer(0), help="hard items per (family, task) at most (default: no cap)")
    add("--seed", type=int, default=0, help="seed of every bootstrap and shuffle (default 0)")
    add("--bootstrap", type=integer(1), default=1000, help="bootstrap resamples for leaderboard CIs (default 1000)")
    add("--bt-rounds", type=integer(1), default=100, help="bootstrap rounds for Bradley–Terry CIs (default 100)")
    add("--elo-rounds", type=integer(1), default=50, help="shuffled orders for online Elo (default 50)")
    add(
        "--elo-k",
        type=NON_NEGATIVE,
        default=16.0,
        help="online Elo K factor (default 16: battles from a few hundred items; FastChat's 4 suits millions)",
    )
    add(
        "--elo-max-battles",
        type=integer(1),
        default=4_000,
        help="online Elo shuffles a seeded sample of at most this many battles per scope (default 4000)",
    )
    add(
        "--orchestration-tasks",
        default=",".join(ORCHESTRATION_TASKS),
        help="comma-separated capability tasks counted in the orchestrator composite (default: %(default)s)",
    )
    add(
        "--cv-folds",
        type=_cv_folds,
        default=DEFAULT_K,
        help="folds of the routing validation (manifest `validation`: routed vs best single model vs oracle); "
        "0 skips it (default %(default)s)",
    )
    add(
        "--calibrations",
        metavar="DIR",
        help=f"judge calibration store read for the judge-reliability section (default: {default_store_dir()})",
    )
    add(
        "--freshness",
        metavar="FILE",
        help="a gold freshness audit (python -m pool.freshness's freshness.json): items carrying a drifted gold "
        "point, and their buckets, are marked 'gold may be stale' (default: the first run folder's "
        "freshness.json, when present)",
    )
    return parser


def summary_lines(summary: Mapping[str, Any]) -> list[str]:
    """What a build did, for a person: rows, buckets, winners, warnings, files written."""
    lines: list[str] = []
    lines.append(
        f"routing.build: {summary['runs']} run(s), {summary['models']} model(s), {summary['rows']} score rows "
        f"({summary['infra_errors']} infra errors, excluded)"
    )
    lines.append(
        f"  {summary['buckets']} buckets: {summary['routable']} routable ({summary['decisive']} decisive, "
        f"{summary['routable'] - summary['decisive']} tied), {summary['insufficient']} with insufficient data"
    )
    if summary.get("judged_decisive"):
        lines.append(
            f"  {summary['judged_decisive']} of the decisive buckets decided by judged battles (pairwise stage)"
        )
    lines.append(
        f"  default model: {summary['default'] or '-'}; orchestrator: {summary['orchestrator'] or '-'}; "
        f"hard subset: {summary['hard_items']} items"
    )
    if summary["kept_apart"]:
        lines.append(
            f"  {summary['kept_apart']} name(s) stand for several model or judge identities, "
            "kept apart (manifest kept_apart)"
        )
    for gap in summary["common_left_out"]:
        lines.append(f"  --common: {gap['model']} left out of {gap['family']}/{gap['task']}: {gap['reason']}")
    if summary.get("stale_gold_items"):
        lines.append(f"  gold may be stale: {summary['stale_gold_items']} item(s) carry a drifted gold point (kept)")
    for warning in summary["judge_warnings"]:
        lines.append(f"  judge reliability warning: {warning}")
    lines.append(f"  wrote {', '.join(OUTPUTS)} to {summary['out']}")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    options = BuildOptions(
        common=args.common,
        since=args.since,
        min_n=args.min_n,
        top_k=args.top_k,
        floor=args.floor,
        lam=args.lam,
        alpha=args.alpha,
        component_floor=args.component_floor,
        hard_fraction=args.hard_fraction,
        hard_min=args.hard_min,
        hard_n=args.hard_n,
        seed=args.seed,
        bootstrap=args.bootstrap,
        bt_rounds=args.bt_rounds,
        elo_rounds=args.elo_rounds,
        elo_k=args.elo_k,
        elo_max_battles=args.elo_max_battles,
        orchestration_tasks=tuple(t.strip() for t in args.orchestration_tasks.split(",") if t.strip()),
        cv_folds=args.cv_folds,
    )
    return build_and_report(args.run, args.out, options, calibration_dir=args.calibrations, freshness=args.freshness)[0]


def build_and_report(
    run_dirs: Sequence[Path | str],
    out_dir: Path | str | None = None,
    options: BuildOptions | None = None,
    calibration_dir: Path | str | None = None,
    freshness: Path | str | None = None,
) -> tuple[int, dict[str, Any] | None]:
    """:func:`build`, its summary printed, or why it failed said in one line: (exit code, summary or None)."""
    try:
        summary = build(run_dirs, out_dir, options, calibration_dir=calibration_dir, freshness=freshness)
    except (LoadError, FolderError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT, None
    except OSError as exc:  # e.g. a full disk while writing the reports; the scores it read are untouched
        print(write_failed("the routing files", exc), file=sys.stderr)
        return EXIT_WRITE, None
    print("\n".join(summary_lines(summary)))
    return EXIT_OK, summary


if __name__ == "__main__":
    sys.exit(main())
