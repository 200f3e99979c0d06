"""The CHIP TCM submission line: ``case_id@item;item;…@A;B@C@summary text`` (one case per line).

Sub-task answers are separated by ``@``, items within one by ``;``. The summary is the last field
and may itself contain ``@``; nothing else may. Full-width ``；`` is accepted as an item separator
when reading, since models often emit it; the writer always uses ASCII ``;``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from eval.metrics.tcm.chip import chip_choice_score, chip_extraction_score, chip_total, rouge_l_chars

_ITEM_SEPARATOR = re.compile(r"[;；]")
_OPTION = re.compile(r"[A-Z]")


class ChipFormatError(ValueError):
    """A malformed submission line; the message starts with ``source:line:``."""


@dataclass(frozen=True)
class ChipAnswer:
    """One case's four answers, in the task's order."""

    case_id: str
    clinical_info: tuple[str, ...]  # sub-task 1: extracted items
    mechanisms: tuple[str, ...]  # sub-task 2: chosen option letters
    syndromes: tuple[str, ...]  # sub-task 3: chosen option letters
    summary: str  # sub-task 4: free text


def _items(field: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in _ITEM_SEPARATOR.split(field) if item.strip())


def parse_chip_line(line: str, source: str = "<line>", line_number: int = 1) -> ChipAnswer:
    where = f"{source}:{line_number}"
    fields = line.rstrip("\r\n").split("@", 4)
    if len(fields) != 5:
        raise ChipFormatError(
            f"{where}: expected 5 '@'-separated fields (id@info@mechanisms@syndromes@summary), got {len(fields)}"
        )
    case_id = fields[0].strip()
    if not case_id:
        raise ChipFormatError(f"{where}: empty case id before the first '@'")
    options = []
    for name, field in (("mechanisms (field 3)", fields[2]), ("syndromes (field 4)", fields[3])):
        letters = tuple(letter.upper() for letter in _items(field))
        bad = [letter for letter in letters if not _OPTION.fullmatch(letter)]
        if bad:
            raise ChipFormatError(f"{where}: {name} must be option letters A-Z separated by ';', got {bad[0]!r}")
        options.append(letters)
    return ChipAnswer(case_id, _items(fields[1]), options[0], options[1], fields[4].strip())


def read_chip_submission(path: str | Path) -> list[ChipAnswer]:
    """Read a submission file; blank lines are skipped, a bad or repeated case id names its line."""
    path = Path(path)
    answers: list[ChipAnswer] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8-sig") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            answer = parse_chip_line(line, str(path), line_number)
            if answer.case_id in seen:
                raise ChipFormatError(
                    f"{path}:{line_number}: case id {answer.case_id!r} already on line {seen[answer.case_id]}"
                )
            seen[answer.case_id] = line_number
            answers.append(answer)
    return answers


def format_chip_line(answer: ChipAnswer) -> str:
    """One submission line; refuses text that would be misread (separators inside items, newlines)."""
    for name, value in (("case_id", answer.case_id), *((f"item {i!r}", i) for i in answer.clinical_info)):
        if not value or re.search(r"[@;；\r\n]", value):
            raise ValueError(f"{name}: must be non-empty and contain no '@', ';' or newline")
    for name, letters in (("mechanisms", answer.mechanisms), ("syndromes", answer.syndromes)):
        if any(not _OPTION.fullmatch(letter) for letter in letters):
            raise ValueError(f"{name}: options must be single letters A-Z, got {letters!r}")
    if re.search(r"[\r\n]", answer.summary):
        raise ValueError("summary: must be one line; join its lines before writing")
    return "@".join(
        (
            answer.case_id,
            ";".join(answer.clinical_info),
            ";".join(answer.mechanisms),
            ";".join(answer.syndromes),
            answer.summary,
        )
    )


def submission_safe(answer: ChipAnswer) -> ChipAnswer:
    """The answer with what would be misread on its line replaced, so a model's wording never breaks
    the file: inside an extracted item '@' becomes the full-width '＠' and ';' or '；' (separators when
    read) becomes '，'; blank items are dropped; line breaks in the summary become spaces. The case id
    and option letters are left as they are (:func:`format_chip_line` refuses bad ones)."""
    items = tuple(
        cleaned
        for item in answer.clinical_info
        if (cleaned := " ".join(re.sub(r"[;；]", "，", item.replace("@", "＠")).split()))
    )
    return ChipAnswer(answer.case_id, items, answer.mechanisms, answer.syndromes, " ".join(answer.summary.split()))


def write_chip_submission(path: str | Path, answers: Iterable[ChipAnswer]) -> None:
    lines = [format_chip_line(answer) for answer in answers]
    Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def chip_case_score(pred: ChipAnswer, gold: ChipAnswer) -> dict[str, float]:
    """P1–P4 and the weighted total of one case (the task's final result sums this over cases)."""
    p1 = chip_extraction_score(pred.clinical_info, gold.clinical_info)
    p2 = chip_choice_score(pred.mechanisms, gold.mechanisms)
    p3 = chip_choice_score(pred.syndromes, gold.syndromes)
    p4 = rouge_l_chars(pred.summary, gold.summary)
    return {"p1": p1, "p2": p2, "p3": p3, "p4": p4, "total": chip_total(p1, p2, p3, p4)}
