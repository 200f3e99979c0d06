"""``python -m pool.chip_submission RUN_DIR --model M --out FILE``: a CHIP submission file from a run.

The CHIP TCM syndrome-differentiation task (``../shared/seeds/chip-tcm-syndrome-task.txt`` §5.2)
takes one line per case, ``案例编号@临床信息;…@病机字母;…@证候字母;…@临证体会：…。辨证：…``. A run
answers the test-set cases (which have no gold, so they are never scored) when started with
``--answer-unlabelled``; this command reads the model's stored answers from ``RUN_DIR/run.sqlite``,
reads each answer as the ``tcm_case`` scorer does (the one-line format the case asks for, else
numbered sections; option texts mapped to their letters), and writes the lines in the order the
cases were loaded. The option letters come from the cases themselves, so the run's data files are
read again (``--data`` names them when they have moved).

Every CHIP case the model was asked is written (``--unlabelled-only``: only the cases without a
gold). A case without an answer (an infra error, or a run not finished) stops the command before
anything is written — ``python -m pool.run --resume RUN_DIR`` first — unless ``--allow-missing``
writes the others. Exit codes: 0 written; 1 cases without an answer; 2 bad input (not a run, a model
the run did not ask, no CHIP case, data not found).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from eval.files import atomic_write_text
from eval.items import Item
from eval.loaders.formats.chip import ANSWER_ONLY_META, TASK
from eval.metrics.tcm.chip_format import ChipAnswer, format_chip_line, submission_safe
from eval.scorers.answer_parsing import clean_answer, fold, strip_reasoning
from eval.scorers.tcm_parsing import parse_tcm_case
from pool.items_source import DataError, load_run_items
from pool.run_spec import stored_options
from pool.store.outcome import ANSWER_STAGE
from pool.store.run_store import RunStore

EXIT_OK, EXIT_MISSING, EXIT_INPUT = 0, 1, 2
SHOWN_MISSING = 5  # case ids named in the message; the rest are counted


@dataclass
class Submission:
    """The lines of one model's submission, and the cases that have none."""

    lines: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # case ids asked but not answered


def case_answer(item: Item, text: str) -> ChipAnswer:
    """The model's answer to one case as the four sub-task answers, read as the scorer reads them.

    The scorer reads NFKC-folded text (``：`` as ``:``), but the task's scorer compares the submitted
    characters with its gold as they are (P1 whole items, P4 characters), so each extracted item and
    the summary are taken back from the model's own text: the folded fragment is found in the
    answer, folded character by character, and the characters it came from are submitted.
    """
    cleaned, _ = clean_answer(text)
    case_id = str(item.meta.get("case_id", item.local_id))
    parsed = parse_tcm_case(cleaned, case_id, item.meta.get("mechanism_options"), item.meta.get("syndrome_options"))
    answer = parsed.value
    original, _ = strip_reasoning(text)
    folded = _FoldedText(original)
    info = tuple(folded.original_of(piece) for piece in answer.clinical_info)
    summary = folded.original_of(answer.summary)
    return submission_safe(ChipAnswer(case_id, info, answer.mechanisms, answer.syndromes, summary))


class _FoldedText:
    """A text folded one character at a time, remembering which character each folded one came from."""

    def __init__(self, original: str) -> None:
        self.original = original
        pieces, self.source = [], []
        for index, char in enumerate(original):
            folded = fold(char)
            pieces.append(folded)
            self.source.extend([index] * len(folded))
        self.folded = "".join(pieces)

    def original_of(self, fragment: str) -> str:
        """The original characters of the last place ``fragment`` (folded, its spaces any whitespace)
        occurs; the fragment itself when it is not found (markdown the scorer removed, say)."""
        words = fragment.split()
        if not words:
            return fragment
        matches = list(re.finditer(r"\s+".join(map(re.escape, words)), self.folded))
        if not matches:
            return fragment
        start, end = matches[-1].span()
        return " ".join(self.original[self.source[start] : self.source[end - 1] + 1].split())


def build_submission(
    run_dir: Path, model: str, *, data: Sequence[str] | None = None, unlabelled_only: bool = False
) -> Submission:
    """Read the run and its data; raises DataError (bad input) naming what to pass instead."""
    options = stored_options(run_dir)
    with RunStore(run_dir, create=False) as store:
        run_id = store.runs()[0].run_id
        planned = [u.item_id for u in store.planned_units(run_id) if u.stage == ANSWER_STAGE and u.model == model]
        if not planned:
            models = sorted({u.model for u in store.planned_units(run_id)})
            raise DataError(f"{run_dir}: the run asked no model {model!r}; its models: {', '.join(models)}")
        asked = set(planned)
        answers = {
            r.item_id: r
            for r in store.iter_results(run_id, stage=ANSWER_STAGE, requests=False)
            if r.model == model and r.item_id in asked
        }
    paths = list(data) if data else options.get("data")
    if not paths:
        raise DataError(f"{run_dir}: the run used the built-in demo suite, which has no CHIP case; pass --data")
    try:
        items = load_run_items(paths).items
    except DataError as exc:
        raise DataError(f"{exc} (the run's data; pass --data PATH where the files are now)") from None
    cases = [
        i
        for i in items
        if i.task == TASK and i.id in asked and (not unlabelled_only or i.meta.get(ANSWER_ONLY_META) is True)
    ]
    if not cases:
        which = "unlabelled CHIP case (start the run with --answer-unlabelled)" if unlabelled_only else "CHIP case"
        raise DataError(f"{run_dir}: model {model!r} was asked no {which} of {', '.join(map(str, paths))}")
    submission = Submission()
    for item in cases:
        result = answers.get(item.id)
        if result is None or result.status == "infra_error":
            submission.missing.append(str(item.meta.get("case_id", item.local_id)))
            continue
        try:
            submission.lines.append(format_chip_line(case_answer(item, result.text)))
        except ValueError as exc:  # a case id the line format cannot carry
            raise DataError(f"{item.source}: case {item.local_id!r}: {exc}") from None
    return submission


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pool.chip_submission",
        description="Write a CHIP TCM submission file (one 'id@info;…@A;B@C@summary' line per case) from a run's "
        "answers; run with --answer-unlabelled to have the test-set cases answered.",
        epilog="Exit codes: 0 written; 1 some cases have no answer (nothing written; resume the run, or "
        "--allow-missing); 2 bad input.",
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run folder written by python -m pool.run")
    parser.add_argument("--model", required=True, help="the pool model whose answers are submitted")
    parser.add_argument("--out", required=True, metavar="FILE", help="the submission file to write (UTF-8)")
    parser.add_argument(
        "--data", nargs="+", metavar="PATH", help="the CHIP case files, when they are no longer where the run read them"
    )
    parser.add_argument("--unlabelled-only", action="store_true", help="only the cases without a gold (the test set)")
    parser.add_argument(
        "--allow-missing",
        action="store_true",
        help="write the answered cases even when some have no answer (they are listed on stderr)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        submission = build_submission(
            Path(args.run_dir), args.model, data=args.data, unlabelled_only=args.unlabelled_only
        )
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    if submission.missing:
        shown = ", ".join(submission.missing[:SHOWN_MISSING])
        more = f" and {len(submission.missing) - SHOWN_MISSING} more" if len(submission.missing) > SHOWN_MISSING else ""
        print(
            f"{'warning' if args.allow_missing else 'error'}: {len(submission.missing)} case(s) have no answer from "
            f"{args.model}: {shown}{more}; finish the run with: python -m pool.run --resume {args.run_dir}",
            file=sys.stderr,
        )
        if not args.allow_missing:
            return EXIT_MISSING
    out = Path(args.out)
    try:
        atomic_write_text(out, "".join(line + "\n" for line in submission.lines))
    except OSError as exc:
        print(f"error: {out}: cannot write the submission ({exc.strerror}); pass another --out", file=sys.stderr)
        return EXIT_INPUT
    print(f"{out}: {len(submission.lines)} case(s) of {args.model}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
