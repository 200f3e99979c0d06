"""``python -m routing.screen --evidence DIR --pool FILE [--domain D --axis A] [--top 5] [--out DIR]``.

Reads the evidence entries and the pool's models, writes ``shortlist.yaml`` and ``screen.md`` into
``--out`` (default: the current folder) and prints the tiers. No model is called. Every weight of the
formula is a flag (``--w-rank 0.4`` …; :mod:`routing.screen.formula`). Exit codes: 0 written; 1 writing
failed (e.g. a full disk); 2 bad input (an evidence entry, the pool file, a flag), named ``file:line: field``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from eval.files import FolderError, atomic_write_text, make_folder, write_failed
from routing.cli_types import NON_NEGATIVE, integer
from routing.screen.evidence import EvidenceError, read_evidence
from routing.screen.formula import Weights, weight_help
from routing.screen.models import CandidatesError, candidates_from_names, candidates_from_pool, families_with
from routing.screen.page import render_screen
from routing.screen.score import run_screen
from routing.screen.shortlist import dump_shortlist, shortlist_document

EXIT_OK, EXIT_WRITE, EXIT_INPUT = 0, 1, 2
DEFAULT_POOL = "model_pool.yaml"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m routing.screen",
        description="Theory screen, before spending: score the pool's models against published evidence "
        "(no model is called) and write shortlist.yaml (must-test / optional / skip, ceiling references) "
        "and screen.md.",
        epilog="Exit codes: 0 written; 1 writing failed; 2 bad input. Then: python -m pool.run --from-shortlist "
        "shortlist.yaml, and python -m routing.scenario RUN_DIR --shortlist shortlist.yaml. See docs/screen.md.",
    )
    parser.add_argument("--evidence", required=True, metavar="DIR", help="folder of evidence entries (*.md)")
    parser.add_argument(
        "--pool", metavar="FILE", help=f"pool file whose models are the candidates (default ./{DEFAULT_POOL})"
    )
    parser.add_argument("--models", metavar="M1,M2", help="candidate names instead of a pool file")
    parser.add_argument("--all", action="store_true", help="also screen the pool's disabled models")
    parser.add_argument("--domain", help="the domain asked about (e.g. cardiology); default: any")
    parser.add_argument("--axis", help="the axis asked about (e.g. specialty, capability, orchestration); default: any")
    parser.add_argument("--top", type=integer(0), default=5, metavar="N", help="ceiling references to list (default 5)")
    parser.add_argument(
        "--family",
        action="append",
        default=[],
        metavar="WORD[,WORD]",
        help="extra family words, looked for after the built-in ones (repeatable), e.g. --family gemma,smollm",
    )
    parser.add_argument(
        "--toward-prior",
        action="store_true",
        help="score = prior + relevance × proximity × (champion − prior), so weak or distant evidence cannot "
        "put a candidate below one without evidence (the default formula's weak spot, docs/screen.md)",
    )
    parser.add_argument("--out", default=".", metavar="DIR", help="where shortlist.yaml and screen.md go (default .)")
    weights = parser.add_argument_group("formula weights (defaults: the med-agent-verifier README's numbers)")
    defaults = Weights()
    for name, text in weight_help().items():
        weights.add_argument(
            "--" + name.replace("_", "-"),
            type=NON_NEGATIVE,
            default=getattr(defaults, name),
            metavar="X",
            help=f"{text} (default {getattr(defaults, name):g})",
        )
    return parser


def _weights(args: argparse.Namespace) -> Weights:
    values = {name: getattr(args, name) for name in weight_help()}
    for name in ("institutions_full", "citations_full", "maintainers_full"):
        if values[name] <= 0:
            raise ValueError(f"--{name.replace('_', '-')}: must be > 0, got {values[name]:g}")
    if values["optional"] > values["must_test"]:
        raise ValueError(f"--optional {values['optional']:g} above --must-test {values['must_test']:g}: swap them")
    if values["proximity_base"] > 1:
        raise ValueError(f"--proximity-base: must be in [0, 1], got {values['proximity_base']:g}")
    return Weights(**values)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.pool and args.models:
            raise ValueError("--pool with --models: pick one (the pool's models, or the names given)")
        weights = _weights(args)
        families = families_with([w for value in args.family for w in value.split(",")])
        entries = read_evidence(Path(args.evidence))
        if args.models:
            candidates = candidates_from_names(args.models.split(","))
            if not candidates:
                raise ValueError(f"--models {args.models!r} names nothing; name at least one model")
        else:
            candidates = candidates_from_pool(Path(args.pool or DEFAULT_POOL), include_disabled=args.all)
        out = make_folder(Path(args.out), "--out")
    except (EvidenceError, CandidatesError, FolderError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    screen = run_screen(
        entries,
        candidates,
        domain=args.domain,
        axis=args.axis,
        weights=weights,
        families=families,
        toward_prior=args.toward_prior,
        top=args.top,
    )
    generated_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    try:
        atomic_write_text(out / "shortlist.yaml", dump_shortlist(shortlist_document(screen, generated_at)))
        atomic_write_text(out / "screen.md", render_screen(screen, generated_at))
    except OSError as exc:
        print(write_failed(f"the shortlist into {out}", exc), file=sys.stderr)
        return EXIT_WRITE
    for s in screen.candidates:
        detail = "neutral prior" if s.best is None else f"{s.best.champion.row.model} in {s.best.champion.entry.title}"
        print(f"{s.tier:<9}  {s.score:.3f}  {s.name}  ({detail})")
    if screen.ceilings:
        print("ceiling references: " + ", ".join(c.row.model for c in screen.ceilings))
    print(f"shortlist: {out / 'shortlist.yaml'}\nscreen: {out / 'screen.md'}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
