"""A live run's questions: read from a file, the command line or stdin, each with an id of its own text.

A file (``--questions FILE``, or stdin) holds one question per line — blank lines and lines starting
with ``#`` are skipped — or, when its first such line starts with ``{``, JSON lines with ``question``
and an optional ``domain`` (``system:topic``). Each command-line argument is one question.

An id depends on the question alone, never on its position, so the same question has the same id on
every night and ``routing.compare`` pairs it: ``<mode>-`` + the first 12 hex of sha256 over the
*normalised* text (NFKC, case-folded, every whitespace removed: Chinese text has no meaningful space), so
a stray space or a full-width comma does not make a new question. The question is sent as written (trimmed).
A question given twice (the same normalised text) is asked once.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from eval.gold_checks import DOMAIN_PATTERN
from pool.items_source import DataError, read_named_file

MODES = ("patient", "doctor")
JSONL_FIELDS = ("question", "domain")
ID_HEX = 12
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class LiveQuestion:
    """One question as given: its text, its domain when the file gave one, and where it came from."""

    text: str
    domain: str | None = None
    source: str = "argument"  # FILE:LINE, stdin:LINE or argument N

    def live_id(self, mode: str) -> str:
        """``<mode>-<12 hex>``: the item's local id (see the module docstring)."""
        digest = hashlib.sha256(normalised(self.text).encode("utf-8")).hexdigest()
        return f"{mode}-{digest[:ID_HEX]}"


def normalised(text: str) -> str:
    """What makes two questions the same question: NFKC, case-folded, without whitespace."""
    return _SPACES.sub("", unicodedata.normalize("NFKC", text).casefold())


def from_arguments(texts: Sequence[str]) -> list[LiveQuestion]:
    """One question per command-line argument (an empty one is an error, naming its position)."""
    out = []
    for number, text in enumerate(texts, 1):
        if not text.strip():
            raise DataError(f"question argument {number} is empty (an unset shell variable?); give the question text")
        out.append(LiveQuestion(text.strip(), source=f"argument {number}"))
    return out


def from_file(path: Path) -> list[LiveQuestion]:
    """The questions of ``--questions FILE`` (see the module docstring)."""
    return from_text(read_named_file(path, "--questions", "check the path"), str(path))


def from_text(text: str, where: str) -> list[LiveQuestion]:
    """Questions from a file's text; ``where`` names it in messages (a path, or ``stdin``)."""
    lines = [(number, line.strip()) for number, line in enumerate(text.splitlines(), 1)]
    lines = [(number, line) for number, line in lines if line and not line.startswith("#")]
    if not lines:
        raise DataError(f"{where}: no question in it; write one question per line, or JSON lines with question")
    if lines[0][1].startswith("{"):
        return [_json_question(line, f"{where}:{number}") for number, line in lines]
    return [LiveQuestion(line, source=f"{where}:{number}") for number, line in lines]


def _json_question(line: str, where: str) -> LiveQuestion:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(f"{where}: not a JSON object ({exc.msg}); a JSON-lines file has one object per line") from None
    if not isinstance(record, dict):
        raise DataError(f'{where}: not a JSON object; write {{"question": "...", "domain": "system:topic"}}')
    unknown = sorted(set(record) - set(JSONL_FIELDS))
    if unknown:
        raise DataError(f"{where}: {unknown[0]}: unknown field; a question line takes {', '.join(JSONL_FIELDS)}")
    question, domain = record.get("question"), record.get("domain")
    if not isinstance(question, str) or not question.strip():
        raise DataError(f"{where}: question: must be a non-empty string, got {question!r}")
    if domain is not None and (not isinstance(domain, str) or not DOMAIN_PATTERN.match(domain)):
        raise DataError(
            f'{where}: domain: must be a "system:topic" slug such as "cardiology:hypertension", got {domain!r}'
        )
    return LiveQuestion(question.strip(), domain, where)


def distinct(questions: Iterable[LiveQuestion]) -> tuple[list[LiveQuestion], list[str]]:
    """The questions without repeats (the first of each normalised text kept), and a note per repeat."""
    seen: dict[str, LiveQuestion] = {}
    notes = []
    for question in questions:
        key = normalised(question.text)
        if key in seen:
            notes.append(f"{question.source}: the same question as {seen[key].source}; asked once")
        else:
            seen[key] = question
    return list(seen.values()), notes


@dataclass(frozen=True)
class LiveRequest:
    """What a live run asks: its questions (:mod:`pool.live.questions`) and whom the answers are for."""

    questions: tuple[LiveQuestion, ...]
    mode: str = "patient"

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise DataError(f"--mode {self.mode!r}: must be one of {', '.join(MODES)}")
        if not self.questions or not all(isinstance(q, LiveQuestion) for q in self.questions):
            raise DataError("--live: no question; give --questions FILE, questions as arguments, or pipe them on stdin")
        object.__setattr__(self, "questions", tuple(self.questions))


def live_request(
    questions_file: str | None, arguments: Sequence[str], stdin: TextIO, mode: str = "patient"
) -> LiveRequest:
    """The questions of ``--live``: from ``--questions FILE``, else the arguments, else stdin (piped)."""
    if questions_file is not None and arguments:
        raise DataError("--questions with questions as arguments: give one or the other")
    if questions_file is not None:
        questions = from_file(Path(questions_file))
    elif arguments:
        questions = from_arguments(arguments)
    elif stdin.isatty():
        raise DataError("--live: no question; give --questions FILE, questions as arguments, or pipe them on stdin")
    else:
        questions = from_text(stdin.read(), "stdin")
    return LiveRequest(tuple(questions), mode)
