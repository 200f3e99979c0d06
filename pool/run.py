"""``python -m pool.run``: send the selected items to every enabled model of the pool, resumably.

Exit codes: 0 every unit has a result and none is an infra error; 1 some units have infra errors
(see summary.json); 2 bad input (pool file, data, arguments); 3 a significant regression against
the last comparable night (only with ``--fail-on-regression``); 4 the ``--max-cost`` /
``--max-tokens-total`` cap was reached (resume to complete the plan); 5 the night's comparison could not
see a drop of ``--min-drop`` for some model's family (only with ``--fail-on-inconclusive``); 130 interrupted
(resume with ``--resume RUN_DIR``).
"""

from __future__ import annotations

import signal
import sys


def _sigterm_while_starting(signum: int, frame: object) -> None:
    print("interrupted while starting; nothing was run yet", file=sys.stderr)
    raise SystemExit(130)


if __name__ == "__main__":  # before the slow imports: a SIGTERM while starting up still exits 130
    signal.signal(signal.SIGTERM, _sigterm_while_starting)

import argparse
import json
import logging
from collections.abc import Sequence
from typing import Any

from pool.api import (
    EXIT_BUDGET,
    EXIT_INCONCLUSIVE,
    EXIT_INFRA,
    EXIT_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REGRESSION,
    RunInputError,
    RunResult,
    count_selection,
    describe_plan,
    rescore,
    resume,
    run_pool,
)
from pool.config import PoolConfigError
from pool.items_source import DataError
from pool.live.questions import MODES, live_request
from pool.roster import roster_text, shortlisted_models
from pool.run_spec import (
    DEFAULT_CACHE_MAX_AGE_S,
    DEFAULT_POOL,
    EXECUTORS,
    PLAN_OPTIONS,
    RESCORE_OPTIONS,
    RunSpec,
    option_flags,
)
from pool.selection import count_text, valid_tracks
from pool.version import __version__
from routing.cli_types import NON_NEGATIVE, OPEN_FRACTION, SECONDS, duration, integer
from routing.nights.gate.options import add_gate_option
from routing.report.digest import report as digest_report
from routing.screen.shortlist import ShortlistError

__all__ = ["EXIT_INFRA", "EXIT_INPUT", "EXIT_INTERRUPTED", "EXIT_OK", "PLAN_OPTIONS", "build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pool.run",
        description="Send every selected item to every enabled model of a pool; "
        "store, export and summarise the answers.",
        epilog="Exit codes: 0 all units answered; 1 some infra errors; 2 bad input; 3 significant regression (with "
        "--fail-on-regression); 4 budget reached (use --resume); 5 inconclusive comparison (with "
        "--fail-on-inconclusive); 130 interrupted (use --resume).",
    )
    parser.add_argument("--version", action="version", version=f"medpool {__version__}")
    parser.add_argument("--pool", help=f"pool file (default: ./{DEFAULT_POOL}; with --rescore, the run's own pool)")
    parser.add_argument(
        "--data", nargs="+", metavar="PATH", help="item files or folders (default: the built-in demo suite)"
    )
    parser.add_argument("--models", help="comma-separated model names (default: every enabled model)")
    parser.add_argument(
        "--from-shortlist",
        metavar="FILE",
        help="run the must-test models of a shortlist.yaml written by python -m routing.screen (with --tier "
        "optional, the optional ones too); a shortlisted model missing from the pool is a warning on stderr",
    )
    parser.add_argument(
        "--tier",
        choices=("must-test", "optional"),
        help="with --from-shortlist: must-test (the default) or optional (must-test and optional)",
    )
    parser.add_argument("--all", action="store_true", help="include disabled models (with --list: list them too)")
    parser.add_argument(
        "--live",
        action="store_true",
        help="a live run: the pool file's reference_agent: answers each question (--questions FILE, QUESTION "
        "arguments, or stdin) and the candidates are judged against its answers — agreement with the agent, "
        "not truth (docs/live.md); --data then names the suites the questions' domains are inferred from",
    )
    parser.add_argument(
        "--questions",
        metavar="FILE",
        help="with --live: one question per line, or JSON lines with question and an optional domain",
    )
    parser.add_argument(
        "--mode",
        choices=MODES,
        help="with --live: whom the reference answers are for, passed to the agent (default patient)",
    )
    parser.add_argument("question", nargs="*", metavar="QUESTION", help="with --live: a question to ask (repeatable)")
    parser.add_argument("--limit", type=integer(1), help="first N items after filtering")
    parser.add_argument(
        "--track",
        metavar="T1,T2",
        help=f"only items of these tracks: {valid_tracks()}; probe, tool_decision and orchestration "
        "need no --orchestration",
    )
    parser.add_argument(
        "--task",
        metavar="T1,T2",
        help="only items of these tasks (task or suite/task, as `python -m eval.datasets` lists them)",
    )
    parser.add_argument(
        "--domain",
        metavar="D1,D2",
        help="only items whose domain is one of these (system:topic) or in one of these systems "
        "(cardiology = every cardiology:*); items without a domain are dropped, and counted on stderr",
    )
    parser.add_argument("--id", action="append", metavar="ID[,ID]", help="only these item ids (repeatable)")
    parser.add_argument(
        "--sample", type=integer(1), metavar="N", help="first N items per (task, domain); with --subset, of the subset"
    )
    parser.add_argument(
        "--subset",
        metavar="mini|medium|large|FILE",
        help="nested deterministic subset, or a file of item ids (e.g. hard.yaml from routing.build)",
    )
    parser.add_argument(
        "--orchestration",
        action="store_true",
        help="add the orchestration tracks: specialty routing (derived from criteria items), tool decision, probes",
    )
    parser.add_argument("--out", help="run directory (default: runs/<UTC timestamp>)")
    parser.add_argument(
        "--resume",
        metavar="RUN_DIR",
        help="finish an interrupted run; its stored options are used, and giving one of "
        f"{option_flags(PLAN_OPTIONS)} with another value is an error",
    )
    parser.add_argument(
        "--rescore",
        metavar="RUN_DIR",
        help="score a run's stored answers again (e.g. after changing judge: in the pool) without asking "
        f"the models; only {option_flags(RESCORE_OPTIONS)} may differ from the run's own",
    )
    parser.add_argument(
        "--hallu",
        action="store_true",
        help="also ask the judge for claim-level hallucination labels (unsupported rate, factual precision)",
    )
    parser.add_argument(
        "--rejudge-sample",
        type=integer(1),
        metavar="N",
        help="judge N sampled rubric answers again on a perturbed prompt (dimensions reversed) for the "
        "report's judge agreement (Cohen's kappa, Spearman); stored with the run, --rescore may change it",
    )
    parser.add_argument(
        "--anchor-sample",
        type=integer(1),
        metavar="N",
        help="judge N fixed rubric answers again, asking the judge afresh (never the cache), and report "
        "their agreement with the run's verdicts — cached ones are an earlier night's: judge drift",
    )
    parser.add_argument(
        "--with-judge",
        action="store_true",
        help="with --rescore: judge a run that was started with --no-judge (its stored answers)",
    )
    parser.add_argument(
        "--no-judge",
        action="store_true",
        help="skip the LLM judge: judge-scored items are listed as unscorable, "
        "except those with an objective check (SQL, API call), scored by the check alone",
    )
    parser.add_argument(
        "--no-routing", action="store_true", help="do not build leaderboards, manifest and report at the end"
    )
    parser.add_argument(
        "--pairwise",
        action="store_true",
        help="after scoring, have the judge compare side by side (both orders) the answers of the models the "
        "night left tied, within the pool file's pairwise: {budget} judge calls (else 400); the judged "
        "decisions appear beside the score-based ones (docs/scoring.md); the pool file's pairwise: block "
        "turns this on for every run",
    )
    parser.add_argument(
        "--pairwise-budget",
        type=integer(0),
        metavar="N",
        help="at most N judge calls for the pairwise stage (0: no limit); implies --pairwise",
    )
    parser.add_argument(
        "--adaptive",
        action="store_true",
        help="score new models (or --adaptive-models) adaptively: they answer only the items most informative "
        "for them, chosen from item banks fitted on the run history, and get an estimated full-suite score per "
        "family with a 95%% interval, marked estimated (docs/adaptive.md); too small a history: full evaluation",
    )
    parser.add_argument(
        "--adaptive-budget",
        type=OPEN_FRACTION,
        default=0.1,
        metavar="SHARE",
        help="with --adaptive: share of a family's items a model is asked at most (default %(default)s)",
    )
    parser.add_argument(
        "--adaptive-models",
        metavar="M1,M2",
        help="with --adaptive: the models to score adaptively (default: those no bank was fitted on)",
    )
    parser.add_argument(
        "--adaptive-se",
        type=float,
        default=1.0,
        metavar="POINTS",
        help="with --adaptive: stop a model's test once its estimated score's standard error is at most this "
        "many points on 0-100 (default %(default)s), or at the budget",
    )
    parser.add_argument(
        "--answer-unlabelled",
        action="store_true",
        help="also send unlabelled cases (CHIP test-set cases) as answer-only units: stored, not scored, "
        "not ranked; python -m pool.chip_submission writes the submission file from them",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the plan (models × items × stages, backends, limits) and exit"
    )
    parser.add_argument(
        "--count",
        action="store_true",
        help="print how many items and units (items × models) the selection gives, per track and "
        "task, and exit; needs no server or key",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="print the pool file's roster (name, backend and type, enabled, think) and the judge, "
        "and exit; --all lists disabled models too; needs no server or key",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the shared response cache")
    parser.add_argument("--cache-dir", help="response cache folder (default: $MEDPOOL_CACHE_DIR or ~/.cache/medpool)")
    parser.add_argument(
        "--max-consecutive-failures",
        type=integer(0),
        default=5,
        help="give up on a model after this many infra errors in a row (default 5; 0 never)",
    )
    parser.add_argument(
        "--log-interval", type=SECONDS, default=30.0, help="seconds between progress lines when not on a terminal"
    )
    parser.add_argument(
        "--cache-max-age",
        type=duration,
        default=DEFAULT_CACHE_MAX_AGE_S,
        metavar="DURATION",
        help="ask again for cached answers older than this (e.g. 12h, 90m, 3600, never; default 12h): "
        "a hosted model can change behind the same id. Judge verdicts are not aged",
    )
    parser.add_argument(
        "--max-cost",
        type=NON_NEGATIVE,
        metavar="AMOUNT",
        help=f"stop issuing requests once tonight's calls cost this much at the pool file's prices; "
        f"calls in flight finish, the rest stay pending for --resume (exit {EXIT_BUDGET})",
    )
    parser.add_argument(
        "--max-tokens-total",
        type=integer(1),
        metavar="N",
        help=f"the same cap in prompt + completion tokens (exit {EXIT_BUDGET})",
    )
    parser.add_argument(
        "--history-root",
        metavar="DIR",
        help="runs root whose index.jsonl records this run and holds the nights it is compared with "
        "(default: the run folder's parent, e.g. runs/)",
    )
    add_gate_option(
        parser,
        "--fail-on-regression",
        f"exit {EXIT_REGRESSION} when the comparison with the last comparable night shows a significant "
        "regression larger than THRESHOLD score points (scores in [0, 1]; default 0: any)",
    )
    add_gate_option(
        parser,
        "--min-drop",
        "the drop that matters in the nightly comparison (scores in [0, 1]; default %(default)s): a family "
        "whose test could not see it is 'inconclusive', not 'no change' (docs/running.md)",
    )
    add_gate_option(
        parser,
        "--fail-on-inconclusive",
        f"exit {EXIT_INCONCLUSIVE} when the nightly comparison is inconclusive for some model's family "
        "(and nothing regressed)",
    )
    add_gate_option(
        parser,
        "--sequential",
        "also run the anytime-valid sequential gate, whose evidence accumulates night after night in "
        "the history root's gate_sequential.json (docs/statistics.md); its alarm counts as a regression",
    )
    parser.add_argument(
        "--executor",
        choices=EXECUTORS,
        help="where requests are sent from: local (asyncio lanes in this process, the default) or ray "
        "(one actor per backend lane on a Ray cluster); overrides the pool file's execution: block",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="the Ray cluster to join (as for ray.init, e.g. auto or 10.0.0.1:6379); default: a private "
        "cluster on this machine, on loopback only",
    )
    return parser


def _one_mode(args: argparse.Namespace) -> None:
    """--resume, --rescore, --dry-run, --count, --list and --live each do one thing: two of them is an error."""
    given = [
        flag
        for flag, on in (
            ("--resume", args.resume),
            ("--rescore", args.rescore),
            ("--dry-run", args.dry_run),
            ("--count", args.count),
            ("--list", args.list),
            ("--live", args.live),
        )
        if on
    ]
    if len(given) > 1:
        raise DataError(
            f"{' with '.join(given)}: use one; --resume finishes a run, --rescore scores a finished run "
            "again, --dry-run and --count describe a new run, --list prints the pool's roster, --live starts a "
            "live run"
        )
    if not args.live and (args.questions or args.question or args.mode):
        raise DataError("--questions, --mode and QUESTION arguments are for a live run: add --live")


def _from_shortlist(args: argparse.Namespace) -> None:
    """``--from-shortlist``: the shortlisted models the pool has become ``--models``; missing ones are warned about."""
    if args.tier and not args.from_shortlist:
        raise DataError(
            "--tier without --from-shortlist: --tier picks the tiers of a shortlist; add --from-shortlist FILE"
        )
    if not args.from_shortlist:
        return
    for flag, on in (
        ("--models", args.models),
        ("--resume", args.resume),
        ("--rescore", args.rescore),
        ("--list", args.list),
    ):
        if on:
            raise DataError(
                f"--from-shortlist with {flag}: the shortlist picks the models of a new run; drop one of them"
            )
    pool_file = args.pool or DEFAULT_POOL
    try:
        names, warnings = shortlisted_models(pool_file, args.from_shortlist, args.tier or "must-test")
    except ShortlistError as exc:
        raise DataError(str(exc)) from None
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if not names:
        raise DataError(
            f"--from-shortlist {args.from_shortlist}: none of its {args.tier or 'must-test'} models is in the pool "
            f"{pool_file}; add them to the pool file, or use --tier optional"
        )
    args.models = ",".join(names)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return EXIT_INPUT


def spec_from_args(args: argparse.Namespace) -> RunSpec:
    """The CLI's only job: turn arguments into a :class:`RunSpec`."""
    return RunSpec(
        pool=args.pool,
        data=args.data,
        models=args.models,
        all=args.all,
        limit=args.limit,
        track=args.track,
        task=args.task,
        domain=args.domain,
        id=args.id,
        sample=args.sample,
        subset=args.subset,
        orchestration=args.orchestration,
        no_judge=args.no_judge,
        hallu=args.hallu,
        rejudge_sample=args.rejudge_sample,
        anchor_sample=args.anchor_sample,
        answer_unlabelled=args.answer_unlabelled,
        no_routing=args.no_routing,
        no_cache=args.no_cache,
        cache_dir=args.cache_dir,
        max_consecutive_failures=args.max_consecutive_failures,
        out=args.out,
        executor=args.executor,
        ray_address=args.ray_address,
        log_interval=args.log_interval,
        with_judge=args.with_judge,
        live=live_request(args.questions, args.question, sys.stdin, args.mode or "patient") if args.live else None,
        history_root=args.history_root,
        fail_on_regression=args.fail_on_regression,
        min_drop=args.min_drop,
        fail_on_inconclusive=args.fail_on_inconclusive,
        sequential=args.sequential,
        cache_max_age=args.cache_max_age,
        max_cost=args.max_cost,
        max_tokens_total=args.max_tokens_total,
        adaptive=args.adaptive,
        adaptive_budget=args.adaptive_budget,
        adaptive_models=args.adaptive_models,
        adaptive_se=args.adaptive_se,
        pairwise=args.pairwise,
        pairwise_budget=args.pairwise_budget,
    )


def _flaws(entry: dict[str, Any], errors: int) -> str:
    """The flawed answers by reason (``, truncated 56 (cut at max_tokens)``): answers, scored as given."""
    flaws = {name: n for name, n in entry.get("answer_flaws", {}).items() if n}
    parts = [
        f"{name} {n}" + (" (cut at the token budget, max_tokens)" if name == "truncated" else "")
        for name, n in flaws.items()
    ]
    other = errors - sum(flaws.values())
    if other > 0:  # rows of a store written before reasons were counted
        parts.append(f"flawed {other}")
    return "".join(f", {part}" for part in parts)


def _print_summary(result: RunResult) -> None:
    print(f"run directory: {result.run_dir}")
    for model, entry in result.summary.get("models", {}).items():
        counts = entry.get("status", {})
        failed = f"  FAILED: {entry['failed']}" if entry.get("failed") else ""
        print(
            f"  {model}: ok {counts.get('ok', 0)}{_flaws(entry, counts.get('error', 0))}, "
            f"infra_error {counts.get('infra_error', 0)}, cache hits {entry.get('cache_hits', 0)}{failed}"
        )
    print(f"results: {result.run_dir / 'results.jsonl'}\nsummary: {result.run_dir / 'summary.json'}")
    try:  # the judged answers at a glance (routing.report.digest), also written to RUN_DIR/digest.md
        for line in digest_report(result.run_dir):
            print(line)
    except (OSError, ValueError) as exc:
        print(f"warning: digest not written: {exc}", file=sys.stderr)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # SIGTERM outside the event loop (loading, exporting, routing) ends like Ctrl-C


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stderr)
    args = build_parser().parse_args(argv)
    previous_sigterm = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return _main(args)
    except KeyboardInterrupt:
        print("interrupted before the run started; nothing to resume", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)


def _main(args: argparse.Namespace) -> int:
    try:
        _one_mode(args)
        _from_shortlist(args)
        if args.list:
            print(roster_text(args.pool or DEFAULT_POOL, args.all))
            return EXIT_OK
        spec = spec_from_args(args)
        if args.dry_run or args.count:
            described = describe_plan(spec) if args.dry_run else count_selection(spec)
            for note in described["selection_notes"]:
                print(note, file=sys.stderr)
            print(json.dumps(described, ensure_ascii=False, indent=2) if args.dry_run else count_text(described))
            return EXIT_OK
        if args.resume:
            result = resume(args.resume, spec)
        elif args.rescore:
            result = rescore(args.rescore, spec)
        else:
            result = run_pool(spec)
    except (RunInputError, DataError, PoolConfigError) as exc:
        return _fail(str(exc))
    if result.summary:
        _print_summary(result)
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    compare_md = result.run_dir / "compare.md"
    if result.compared_with is not None and compare_md.is_file():
        print(f"compared with {result.compared_with}: {compare_md}")
    if result.exit_code == EXIT_REGRESSION:
        print(
            f"significant regression against {result.compared_with} (see {compare_md}); exit {EXIT_REGRESSION}",
            file=sys.stderr,
        )
    if result.exit_code == EXIT_INCONCLUSIVE:
        print(
            f"the comparison with {result.compared_with} could not see a drop of {spec.min_drop:g} for some "
            f"model's family (see {compare_md}); exit {EXIT_INCONCLUSIVE}",
            file=sys.stderr,
        )
    if result.exit_code == EXIT_BUDGET:
        print(
            f"budget reached; finished results are saved. Complete the plan with: python -m pool.run --resume "
            f"{result.run_dir}",
            file=sys.stderr,
        )
    if result.exit_code == EXIT_INTERRUPTED:
        print(
            f"interrupted; finished results are saved. Resume with: python -m pool.run --resume {result.run_dir}",
            file=sys.stderr,
        )
    elif result.exit_code == EXIT_INFRA and any(c.get("infra_error") for c in result.counts.values()):
        infra = sum(c.get("infra_error", 0) for c in result.counts.values())
        print(
            f"{infra} unit(s) ended in infra_error (no answer); see summary.json. "
            f"Retry them with: python -m pool.run --resume {result.run_dir}",
            file=sys.stderr,
        )
    return result.exit_code


if __name__ == "__main__":
    sys.exit(main())
