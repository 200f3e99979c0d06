"""Reading structured TCM answers: typed entities, herb doses and the four CHIP sub-answers.

All parsers take :func:`~eval.scorers.answer_parsing.clean_answer`'s text (NFKC-folded, markdown
dropped) and return a :class:`~eval.scorers.answer_parsing.Parsed` with notes. When the model
wrote an explicit answer marker, only the text after the last one is read, so entities or doses
restated in the reasoning are not counted twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from eval.metrics.tcm.chip_format import ChipAnswer, ChipFormatError, parse_chip_line
from eval.metrics.text.parsing import extract_json
from eval.scorers.answer_parsing import (
    Parsed,
    after_last_marker,
    option_labels_in,
    option_texts_in,
    without_option_texts,
)

_QUOTES = "\"'“”‘’「」『』《》"
_ENTITY_EDGE = " \t.,;:!?。、()[]【】" + _QUOTES
_BULLET = re.compile(r"^\s*(?:[-*•+]|\d+[.)、]|\(\d+\))\s*")


def _after_marker_or_all(text: str) -> tuple[str, str]:
    rest = after_last_marker(text)
    return (rest, "text after the last answer marker") if rest else (text, "whole answer")


# ---------------------------------------------------------------------------------------------
# Extraction: "类型：实体" lines (the demo's requested format), JSON, "实体（类型）", table rows


def _json_entities(text: str, types: Collection[str]) -> list[dict[str, str]] | None:
    """Entities from a JSON answer: [{"entity", "type"}], {"entities": [...]}, or {type: [entity, ...]}."""
    value: Any = None
    start, end = text.find("["), text.rfind("]")
    if start != -1 and end > start:
        try:
            value = json.loads(text[start : end + 1])
        except ValueError:
            value = None
    if value is None:
        value = extract_json(text)
    if isinstance(value, Mapping) and isinstance(value.get("entities"), list):
        value = value["entities"]
    entities: list[dict[str, str]] = []
    if isinstance(value, list):
        for entry in value:
            if (
                isinstance(entry, Mapping)
                and isinstance(entry.get("entity"), str)
                and isinstance(entry.get("type"), str)
            ):
                entities.append(
                    {"entity": entry["entity"].strip(_ENTITY_EDGE), "type": entry["type"].strip(_ENTITY_EDGE)}
                )
    elif isinstance(value, Mapping):
        for kind, found in value.items():
            if str(kind).strip(_ENTITY_EDGE) in types:
                found = [found] if isinstance(found, str) else found
                if isinstance(found, list):
                    entities.extend(
                        {"entity": e.strip(_ENTITY_EDGE), "type": str(kind).strip(_ENTITY_EDGE)}
                        for e in found
                        if isinstance(e, str)
                    )
    return [e for e in entities if e["entity"]] or None


def parse_entities(text: str, types: Collection[str]) -> Parsed:
    """Typed entities as a tuple of {"entity", "type"} dicts.

    Read, in order: a JSON answer; else every line ``类型：实体[、实体…]`` (a line may list
    several entities), ``实体（类型）`` pairs and ``| 类型 | 实体 |`` table rows. Only the types the
    item asks for (``types``) are read; other ``tag: text`` lines are ignored and noted.
    """
    segment, how = _after_marker_or_all(text)
    notes = [how]
    from_json = _json_entities(segment, types)
    if from_json:
        return Parsed(tuple(from_json), (*notes, "JSON answer"))
    entities: list[dict[str, str]] = []
    ignored: list[str] = []
    type_pattern = "|".join(re.escape(t) for t in sorted(types, key=len, reverse=True))
    for raw in segment.split("\n"):
        line = _BULLET.sub("", raw).strip()
        if not line:
            continue
        if line.count("|") >= 2:
            cells = [cell.strip(_ENTITY_EDGE) for cell in line.strip("|").split("|")]
            if len(cells) == 2 and cells[0] in types and cells[1]:
                entities.append({"entity": cells[1], "type": cells[0]})
            continue
        tagged = re.match(r"^(.{1,12}?)\s*:\s*(.+)$", line)
        if tagged:
            kind = tagged.group(1).strip(_ENTITY_EDGE)
            if kind in types:
                for piece in re.split(r"[、,;/]", tagged.group(2)):
                    piece = piece.strip(_ENTITY_EDGE)
                    if piece:
                        entities.append({"entity": piece, "type": kind})
                continue
        if type_pattern:
            pairs = re.findall(rf"([^,、;()\s:]+)\s*\(\s*({type_pattern})\s*\)", line)
            if pairs:
                entities.extend({"entity": entity.strip(_ENTITY_EDGE), "type": kind} for entity, kind in pairs)
                continue
        if tagged:
            ignored.append(tagged.group(1).strip())
    if ignored:
        notes.append(f"ignored lines tagged with types not asked for: {sorted(set(ignored))}")
    return Parsed(tuple(entities), tuple(notes) if entities else (*notes, "no entity found"))


def requested_entity_types(question: str, gold: Sequence[Mapping[str, str]]) -> set[str]:
    """The types an extraction item asks for: the gold's types plus any “quoted” names in the question."""
    types = {entry["type"] for entry in gold}
    types.update(t for t in re.findall(r"[“\"「]([^”\"」\n]{1,8})[”\"」]", question) if t not in ("类型", "实体"))
    return types


# ---------------------------------------------------------------------------------------------
# Herb doses: "柴胡 10g", "柴胡10克", "白芍：15 g", "麻黄(去节) 9g", "人参、白术各9g", "6-9g"

_NUMBER = r"(\d+(?:\.\d+)?)(?:\s*(?:-|~|至|到)\s*(\d+(?:\.\d+)?))?"
_UNIT = r"\s*(?:g|G|克)(?![A-Za-z])"
_HERB = r"[\u4e00-\u9fff]{1,10}(?:\([^()\n]{0,12}\))?"
_EACH = re.compile(rf"((?:{_HERB}\s*[、,]\s*)+{_HERB})\s*各\s*{_NUMBER}{_UNIT}")
_ONE = re.compile(rf"({_HERB})[\s:|]*{_NUMBER}{_UNIT}")


def _grams(low: str, high: str | None) -> float:
    return (float(low) + float(high)) / 2 if high else float(low)


def _herb_name(raw: str) -> str:
    return re.sub(r"\([^()]*\)", "", raw).strip()


def parse_doses(text: str) -> Parsed:
    """Herb doses as {herb: grams}. A range counts its midpoint; "A、B各9g" gives each 9 g; a herb
    named twice keeps its last dose (a final list after reasoning wins)."""
    segment, how = _after_marker_or_all(text)
    notes = [how]
    found: list[tuple[int, str, float]] = []
    for match in _EACH.finditer(segment):
        grams = _grams(match.group(2), match.group(3))
        found.extend((match.start(), _herb_name(herb), grams) for herb in re.split(r"\s*[、,]\s*", match.group(1)))
    blanked = _EACH.sub(lambda m: " " * len(m.group(0)), segment)
    for match in _ONE.finditer(blanked):
        if match.group(3):
            notes.append(f"{_herb_name(match.group(1))}: dose range, took the midpoint")
        found.append((match.start(), _herb_name(match.group(1)), _grams(match.group(2), match.group(3))))
    doses: dict[str, float] = {}
    for _, herb, grams in sorted(found):
        if herb in doses:
            notes.append(f"{herb} named twice: kept the last dose")
        if herb:
            doses[herb] = grams
    return Parsed(doses, tuple(notes) if doses else (*notes, "no herb dose found"))


# ---------------------------------------------------------------------------------------------
# CHIP case: "信息;信息@A;B@C@体会" (the demo's format), or four numbered sections

_SECTION = re.compile(r"(?m)^\s*(?:\(\s*([1-4])\s*\)|([1-4])\s*[.)、:]|第([一二三四])(?:部分|问)\s*:?)")
_CHINESE_DIGIT = {"一": "1", "二": "2", "三": "3", "四": "4"}
_FIELD_TAG = re.compile(r"^\s*(?:[^\s:@;]{1,8}(?:\([^()]{0,8}\))?\s*:)\s*")
_ITEM_SPLIT = re.compile(r"\s*[;、,\n]\s*")


def _letters(field: str, options: Mapping[str, str] | None) -> tuple[str, ...]:
    labels = list(options) if options else [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    pairs = list(options.items()) if options else []
    field = _FIELD_TAG.sub("", field)
    letters = option_labels_in(without_option_texts(field, pairs), labels)
    if not letters and pairs:
        letters = option_texts_in(field, pairs)
    return tuple(sorted(set(letters)))


def _items(field: str) -> tuple[str, ...]:
    field = _FIELD_TAG.sub("", field.strip())
    return tuple(p for p in (piece.strip(_ENTITY_EDGE) for piece in _ITEM_SPLIT.split(field)) if p)


def _chip_line(text: str, case_id: str) -> str | None:
    """The last line holding at least three '@' (the four answers), minus any answer marker or echoed id."""
    lines = [line.strip() for line in text.split("\n") if line.count("@") >= 3]
    if not lines:
        return None
    line = lines[-1]
    rest = after_last_marker(line)
    if rest and rest.count("@") >= 3:
        line = rest
    head, _, tail = line.partition("@")
    if line.count("@") >= 4 and (head.strip() == case_id or re.fullmatch(r"[A-Za-z0-9_.-]+", head.strip())):
        line = tail  # the model echoed a case id
    return line


def parse_tcm_case(
    text: str, case_id: str, mechanism_options: Mapping[str, str] | None, syndrome_options: Mapping[str, str] | None
) -> Parsed:
    """The four CHIP answers as a :class:`eval.ChipAnswer`.

    First the submission-line format the case asks for (``info;info@A;B@C@summary``, read with
    :func:`eval.parse_chip_line`, items also split on 、 and ，); else four numbered sections
    ``(1) … (2) … (3) … (4) …``. Option letters may be given as letters or as option texts.
    An answer in neither shape is an empty ChipAnswer (every sub-score 0).
    """
    line = _chip_line(text, case_id)
    if line is not None:
        try:
            strict = parse_chip_line(f"{case_id}@{line}")
            how = "CHIP submission line (strict format)"
            fields = (
                ";".join(strict.clinical_info),
                ";".join(strict.mechanisms),
                ";".join(strict.syndromes),
                strict.summary,
            )
        except ChipFormatError as error:
            how = f"CHIP line, read leniently ({str(error).split(': ', 1)[-1]})"
            fields = tuple((line.split("@", 3) + ["", "", ""])[:4])
    else:
        sections: dict[str, str] = {}
        marks = list(_SECTION.finditer(text))
        for index, mark in enumerate(marks):
            number = mark.group(1) or mark.group(2) or _CHINESE_DIGIT[mark.group(3)]
            end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
            sections.setdefault(number, text[mark.end() : end].strip())
        if len(sections) < 2:
            empty = ChipAnswer(case_id, (), (), (), "")
            return Parsed(empty, ("no '@'-separated answer line and no numbered sections: nothing parsed",))
        how = f"numbered sections {sorted(sections)}"
        fields = tuple(sections.get(str(n), "") for n in range(1, 5))
    info, mechanisms, syndromes, summary = fields
    summary = " ".join(summary.split())
    answer = ChipAnswer(
        case_id, _items(info), _letters(mechanisms, mechanism_options), _letters(syndromes, syndrome_options), summary
    )
    return Parsed(answer, (how,))
