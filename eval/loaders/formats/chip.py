"""CHIP TCM syndrome differentiation: one case → one ``tcm_case`` item.

The cases follow ``../shared/seeds/chip-tcm-syndrome-task.txt`` §4.2. The file is JSON: a list of
case objects (``[{...}, {...}]``, pretty-printed or not) or JSON lines (one case per line). A case
has the §4.2 fields (keys are matched after NFKC folding and with spaces removed, so
``信息识别抽取能力:临床信息`` with an ASCII colon is the same field):

======================================  =========  =================================================
field                                   needed     read as
======================================  =========  =================================================
案例编号                                 always     the local id (string or integer)
临床资料                                 always     the case text, shown to the model unchanged
病机选项                                 always     ``A:火升风动;B:气血亏耗;…`` → (letter, text) pairs
证候选项                                 always     the same, for syndromes
信息识别抽取能力：临床信息               labelled   ``面色不华;紧张;…`` → gold ``clinical_info``
病机答案                                 labelled   ``B;C;D`` → gold ``mechanisms`` (letters)
证候答案                                 labelled   ``D`` → gold ``syndromes`` (letters)
信息解释总结能力：临证体会和辨证结果     labelled   the gold ``summary`` (P4 reference)
信息分析推断能力：病机 / ：证候           no         the mechanism / syndrome names, kept in meta
======================================  =========  =================================================

Lists split on ``;`` or ``；``; option lists accept ``:`` or ``：`` after the letter; answer letters
may also be written together (``BCD``). Option and answer fields may instead be JSON
(``{"A": "…"}``, ``["B", "C"]``). Answer letters must be among the case's option letters.

Every case becomes task ``chip_tcm``, track ``tcm``, gold type ``tcm_case`` with gold
``{"clinical_info": [...], "mechanisms": [letters], "syndromes": [letters], "summary": str}``; the
option sets go to ``meta["mechanism_options"]`` / ``meta["syndrome_options"]`` ({letter: text}),
where the ``tcm_case`` scorer reads them. The question is the case text followed by the four
sub-questions in the task's order and the one-line answer format the scorer parses first
(``信息;信息@A;B@C@临证体会：…。辨证：…``).

A case with none of the four labelled fields (a test-set case) is loaded unscorable, with a skip
reason and a placeholder gold (``UNLABELLED``; the Item model checks a gold's shape even when the
item is not scored), and marked answer-only (``meta["unlabelled"]``, :data:`ANSWER_ONLY_META`): a run
with ``--answer-unlabelled`` still sends it, so that ``python -m pool.chip_submission`` can write
the task's submission file from the answers. A case with only some of them is an error, as is any
missing or malformed field: ``path:line: field '…'``, where line is the case's line (JSON lines) or
the line its object starts on (JSON list).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from eval.items import Item
from eval.loaders.base import ItemFormatError, Loader, Record, read_json_records

TASK = "chip_tcm"
UNLABELLED = "<unlabelled>"
ANSWER_ONLY_META = "unlabelled"  # meta key (True) of a case that can be answered but not scored

CASE_ID = "案例编号"
CASE_TEXT = "临床资料"
MECHANISM_OPTIONS = "病机选项"
SYNDROME_OPTIONS = "证候选项"
CLINICAL_INFO = "信息识别抽取能力：临床信息"
MECHANISM_ANSWER = "病机答案"
SYNDROME_ANSWER = "证候答案"
SUMMARY = "信息解释总结能力：临证体会和辨证结果"
MECHANISM_NAMES = "信息分析推断能力：病机"
SYNDROME_NAMES = "信息分析推断能力：证候"
LABEL_FIELDS = (CLINICAL_INFO, MECHANISM_ANSWER, SYNDROME_ANSWER, SUMMARY)

INSTRUCTION = (
    "作答格式：只输出一行，四个部分按（1）到（4）的顺序排列，部分之间用英文@分隔，同一部分内的多项用英文;分隔，例如：\n"
    "临床信息一;临床信息二@A;C@B@临证体会：……。辨证：……。"
)
_HINT = "see the CHIP case format in eval/loaders/formats/chip.py"
_LIST_SPLIT = re.compile(r"[;；]")
_LETTER_SPLIT = re.compile(r"[;；,，、\s]+")
_OPTION = re.compile(r"^\s*([A-Za-z])\s*[:：.．、]\s*(\S.*?)\s*$")


def _key(name: str) -> str:
    return "".join(unicodedata.normalize("NFKC", name).split())


_RECOGNISED = frozenset(_key(name) for name in (CASE_ID, CASE_TEXT, MECHANISM_OPTIONS))


# ---------------------------------------------------------------------------------------------
# JSON list or JSON lines, one Record per object with the line it starts on (shared with linglan)


# ---------------------------------------------------------------------------------------------
# One case


class _Case:
    """A case's fields by normalised key; errors name the §4.2 field at the case's path:line."""

    def __init__(self, record: Record) -> None:
        self.record = record
        self.fields: dict[str, Any] = {}
        for key, value in record.data.items():
            self.fields.setdefault(_key(str(key)), value)

    def has(self, name: str) -> bool:
        value = self.fields.get(_key(name))
        return (
            value is not None
            and value != ""
            and value != []
            and value != {}
            and not (isinstance(value, str) and not value.strip())
        )

    def get(self, name: str) -> Any:
        if not self.has(name):
            raise self.fail(name, "missing" if _key(name) not in self.fields else "must not be empty")
        return self.fields[_key(name)]

    def fail(self, name: str, problem: str, hint: str = _HINT) -> ItemFormatError:
        return self.record.fail(name, problem, hint)

    def text(self, name: str) -> str:
        value = self.get(name)
        if not isinstance(value, str):
            raise self.fail(name, f"must be a string, got {type(value).__name__}")
        return value

    def items(self, name: str) -> list[str]:
        """``a;b；c`` (or a JSON list of strings) → ["a", "b", "c"], blanks dropped."""
        value = self.get(name)
        if isinstance(value, str):
            pieces = _LIST_SPLIT.split(value)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            pieces = value
        else:
            raise self.fail(name, f"must be a ';'-separated string or a list of strings, got {type(value).__name__}")
        items = [piece.strip() for piece in pieces if piece.strip()]
        if not items:
            raise self.fail(name, "has no items between the ';' separators")
        return items

    def options(self, name: str) -> dict[str, str]:
        """``A:火升风动;B:气血亏耗`` (or ``{"A": "火升风动", ...}``) → {"A": "火升风动", "B": "气血亏耗"}."""
        value = self.get(name)
        if isinstance(value, Mapping):
            pairs = [(str(label), text) for label, text in value.items()]
        elif isinstance(value, str):
            pairs = []
            for index, piece in enumerate(p for p in _LIST_SPLIT.split(value) if p.strip()):
                match = _OPTION.match(piece)
                if not match:
                    raise self.fail(
                        name,
                        f"option {index + 1} {piece.strip()!r} is not 'LETTER:text'",
                        "write options as A:text;B:text",
                    )
                pairs.append((match.group(1), match.group(2)))
        else:
            raise self.fail(name, f"must be a string like 'A:text;B:text' or an object, got {type(value).__name__}")
        options: dict[str, str] = {}
        for label, text in pairs:
            label = unicodedata.normalize("NFKC", label).strip().upper()
            if not re.fullmatch(r"[A-Z]", label) or not isinstance(text, str) or not text.strip():
                raise self.fail(name, f"option {label!r} needs one letter A-Z and a non-empty text")
            if label in options:
                raise self.fail(name, f"option letter {label} appears twice")
            options[label] = text.strip()
        return options

    def letters(self, name: str, options: Mapping[str, str]) -> list[str]:
        """``B;C;D``, ``B；C``, ``BCD`` or ["B", "C"] → ["B", "C", "D"]; each must be an option letter."""
        value = self.get(name)
        if isinstance(value, str):
            pieces = _LETTER_SPLIT.split(unicodedata.normalize("NFKC", value))
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            pieces = [unicodedata.normalize("NFKC", v) for v in value]
        else:
            raise self.fail(name, f"must be option letters like 'B;C;D', got {type(value).__name__}")
        letters: list[str] = []
        for piece in (p.strip().upper() for p in pieces):
            if piece and not re.fullmatch(r"[A-Z]+", piece):
                raise self.fail(
                    name,
                    f"{piece!r} is not an option letter",
                    "write the answer as letters separated by ';', e.g. B;C;D",
                )
            letters.extend(piece)
        unknown = [letter for letter in letters if letter not in options]
        if unknown:
            raise self.fail(name, f"letters {unknown} are not among the options {list(options)}")
        if len(set(letters)) != len(letters):
            raise self.fail(name, f"repeats a letter: {letters}")
        return letters


def _choices(options: Mapping[str, str]) -> str:
    return ";".join(f"{label}:{text}" for label, text in options.items())


def build_question(case_text: str, mechanism_options: Mapping[str, str], syndrome_options: Mapping[str, str]) -> str:
    """The case text (unchanged), the four sub-questions in the task's order, and the answer format."""
    return "\n".join(
        [
            f"临床资料：{case_text}",
            "请依次完成以下四个子任务：",
            "（1）临床信息：识别并抽取临床资料中用于病机判断的临床信息。",
            f"（2）病机（多选）：从以下选项中选出本案的病机。\n{_choices(mechanism_options)}",
            f"（3）证候（多选）：从以下选项中选出本案的证候。\n{_choices(syndrome_options)}",
            "（4）解释总结：写出本案的临证体会和辨证结果，总结辨证过程。",
            INSTRUCTION,
        ]
    )


def case_item(record: Record, suite: str) -> Item:
    """One CHIP case as a ``tcm_case`` Item (see the module doc)."""
    case = _Case(record)
    raw_id = case.get(CASE_ID)
    if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
        raise case.fail(CASE_ID, f"must be a string or an integer, got {type(raw_id).__name__}")
    case_text = case.text(CASE_TEXT)
    mechanism_options = case.options(MECHANISM_OPTIONS)
    syndrome_options = case.options(SYNDROME_OPTIONS)
    meta: dict[str, Any] = {
        "case_id": raw_id,
        "mechanism_options": mechanism_options,
        "syndrome_options": syndrome_options,
    }
    for name, key in ((MECHANISM_NAMES, "mechanism_names"), (SYNDROME_NAMES, "syndrome_names")):
        if case.has(name):
            meta[key] = case.items(name)
    present = [name for name in LABEL_FIELDS if case.has(name)]
    if present:
        missing = next((name for name in LABEL_FIELDS if name not in present), None)
        if missing is not None:
            raise case.fail(
                missing,
                f"missing while {present[0]} is given",
                "a labelled case needs all of: " + ", ".join(LABEL_FIELDS),
            )
        gold: dict[str, Any] = {
            "clinical_info": case.items(CLINICAL_INFO),
            "mechanisms": case.letters(MECHANISM_ANSWER, mechanism_options),
            "syndromes": case.letters(SYNDROME_ANSWER, syndrome_options),
            "summary": case.text(SUMMARY),
        }
        scorable, skip_reason = True, None
    else:
        gold = {
            "clinical_info": [UNLABELLED],
            "mechanisms": [UNLABELLED],
            "syndromes": [UNLABELLED],
            "summary": UNLABELLED,
        }
        scorable, skip_reason = False, "unlabelled CHIP case (test set): no answers to score against"
        meta[ANSWER_ONLY_META] = True
    local_id = str(raw_id).strip()
    if not local_id:
        raise case.fail(CASE_ID, "must not be empty")
    return record.build(
        id=Item.make_id(suite, TASK, local_id),
        suite=suite,
        track="tcm",
        task=TASK,
        gold_type="tcm_case",
        question=build_question(case_text, mechanism_options, syndrome_options),
        gold=gold,
        scorable=scorable,
        skip_reason=skip_reason,
        meta=meta,
    )


def _first(sample: Any) -> Any:
    return sample[0] if isinstance(sample, list) and sample else sample


def recognise(sample: Any) -> bool:
    """A case object (or a list starting with one) with 案例编号, 临床资料 and 病机选项."""
    sample = _first(sample)
    return isinstance(sample, dict) and _RECOGNISED <= {_key(str(key)) for key in sample}


def load(path: Path, suite: str) -> Iterator[Item]:
    for record in read_json_records(path, _HINT):
        yield case_item(record, suite)


LOADER = Loader(
    name="chip",
    description="CHIP TCM syndrome cases (JSON list or lines): "
    "案例编号, 临床资料, 病机/证候选项 and answers → tcm_case",
    suffixes=(".json", ".jsonl"),
    recognise=recognise,
    load=load,
)
