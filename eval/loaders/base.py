"""What every loader shares: the error type, the result type, and field checks that name path:line."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.items import Item, ItemError, Source


class ItemFormatError(ValueError):
    """A file that cannot be loaded. The message reads ``path:line: field: problem. what to do``."""

    def __init__(self, path: str | Path, line: int | None, field: str | None, problem: str, hint: str = "") -> None:
        self.path, self.line, self.field, self.problem, self.hint = str(path), line, field, problem, hint
        where = f"{path}:{line}" if line is not None else str(path)
        what = f"field '{field}': {problem}" if field else problem
        super().__init__(f"{where}: {what}" + (f". {hint}" if hint else ""))


class DuplicateItemError(ItemFormatError):
    """Two items with the same id; the message names both places."""


@dataclass(frozen=True)
class Skipped:
    """Something listed but not run: an unscorable item (``id`` set) or a file that holds no items."""

    source: str  # "path:line" for an item, "path" for a file
    reason: str
    id: str | None = None


@dataclass(frozen=True)
class LoadResult:
    """All items in deterministic order (unscorable ones included, flagged) and what was skipped.

    ``skipped`` lists each unscorable item (with its id and reason) and each file that was read
    past without items (with the reason); ``scorable_items`` is what a run sends to the models.
    """

    items: tuple[Item, ...]
    skipped: tuple[Skipped, ...] = ()

    @property
    def scorable_items(self) -> tuple[Item, ...]:
        return tuple(item for item in self.items if item.scorable)


@dataclass(frozen=True)
class Record:
    """One raw record of a file, with the lines of its fields where the format knows them."""

    data: Any
    path: Path
    line: int
    field_lines: Mapping[str, int] | None = None

    def line_of(self, field: str) -> int:
        return (self.field_lines or {}).get(field.split(".")[0], self.line)

    def fail(self, field: str | None, problem: str, hint: str = "") -> ItemFormatError:
        return ItemFormatError(self.path, self.line_of(field) if field else self.line, field, problem, hint)

    def require(self, field: str, kind: type | tuple[type, ...] = str, hint: str = "") -> Any:
        """``data[field]`` (dotted for nested objects), checked for presence, type and non-emptiness."""
        value: Any = self.data
        for part in field.split("."):
            if not isinstance(value, Mapping) or part not in value:
                raise self.fail(field, "missing", hint)
            value = value[part]
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.fail(field, f"must be {_kind_name(kind)}, got a boolean", hint)
        if not isinstance(value, kind):
            raise self.fail(field, f"must be {_kind_name(kind)}, got {type(value).__name__}", hint)
        if isinstance(value, str) and not value.strip():
            raise self.fail(field, "must not be empty", hint)
        return value

    def source(self) -> Source:
        return Source(str(self.path), self.line)

    def build(self, **fields: Any) -> Item:
        """An Item from these fields; a rejected field is reported at this record's path:line."""
        try:
            return Item(source=self.source(), **fields)
        except ItemError as exc:
            raise self.fail(exc.field, exc.message) from None


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {
        str: "a string",
        int: "an integer",
        list: "a list",
        dict: "an object",
        bool: "true/false",
        float: "a number",
    }
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def read_utf8(path: Path) -> str:
    """The file's text; a file that is not UTF-8 is an error naming it."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ItemFormatError(
            path, None, None, f"not UTF-8 text ({exc.reason} at byte {exc.start})", "save the file as UTF-8"
        ) from None


def _json_line_records(path: Path, text: str, syntax_hint: str, object_hint: str = "") -> Iterator[Record]:
    """One Record per non-blank line of ``text``; invalid JSON or a non-object line is an error at path:line."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ItemFormatError(
                path, number, None, f"invalid JSON at column {exc.colno}: {exc.msg}", syntax_hint
            ) from None
        if not isinstance(data, dict):
            raise ItemFormatError(
                path, number, None, f"a line must be a JSON object, got {type(data).__name__}", object_hint
            )
        yield Record(data, path, number)


def read_json_lines(path: Path) -> Iterator[Record]:
    """One Record per non-blank line; invalid JSON or a non-object line is an error at path:line."""
    yield from _json_line_records(
        path, read_utf8(path).removeprefix("\ufeff"), "each line must be one complete JSON object"
    )


def first_json_record(path: Path) -> Any:
    """The first object of a JSON-lines file or a JSON list (None when empty); what shape recognition sees."""
    first = next(read_json_records(path), None)
    return None if first is None else first.data


def read_json_records(path: Path, hint: str = "") -> Iterator[Record]:
    """One Record per object of a JSON list (line = where the object starts) or of a JSON-lines file.

    A file whose first non-blank character is ``[`` is a JSON list; anything else is JSON lines.
    A leading UTF-8 byte-order mark is ignored. Broken JSON is an ItemFormatError at its line.
    """
    text = read_utf8(path).removeprefix("\ufeff")
    start = len(text) - len(text.lstrip())
    if text[start : start + 1] == "[":
        yield from _json_list(path, text, start + 1, hint)
        return
    yield from _json_line_records(path, text, "each line must be one JSON object, or make the file one JSON list", hint)


def _json_list(path: Path, text: str, pos: int, hint: str) -> Iterator[Record]:
    decoder = json.JSONDecoder()
    line, counted = 1, 0

    def skip_space(at: int) -> int:
        while at < len(text) and text[at] in " \t\r\n":
            at += 1
        return at

    def line_at(at: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, at)
        counted = at
        return line

    pos = skip_space(pos)
    if text[pos : pos + 1] == "]":
        pos = skip_space(pos + 1)
    else:
        while True:
            pos = skip_space(pos)
            try:
                data, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as exc:
                raise ItemFormatError(
                    path, exc.lineno, None, f"invalid JSON at column {exc.colno}: {exc.msg}", hint
                ) from None
            if not isinstance(data, dict):
                raise ItemFormatError(
                    path,
                    line_at(pos),
                    None,
                    f"each element of the list must be a JSON object, got {type(data).__name__}",
                    hint,
                )
            yield Record(data, path, line_at(pos))
            pos = skip_space(end)
            if text[pos : pos + 1] == ",":
                pos += 1
                continue
            if text[pos : pos + 1] == "]":
                pos = skip_space(pos + 1)
                break
            raise ItemFormatError(
                path, line_at(min(pos, len(text))), None, "expected ',' or ']' after an object of the list", hint
            )
    if pos < len(text):
        raise ItemFormatError(path, line_at(pos), None, "unexpected text after the end of the JSON list", hint)


@dataclass(frozen=True)
class Loader:
    """One file format: how to recognise it and how to read it.

    ``recognise(sample)`` looks at a file's shape without validating it: ``sample`` is the parsed
    document for YAML, the first record for JSON lines. ``load(path, suite)`` yields Items in file
    order or raises ItemFormatError. ``suffixes`` are the file endings it may read. A loader with
    a ``skip_reason`` recognises a known file that holds no items: it is listed as skipped.
    """

    name: str
    description: str
    suffixes: tuple[str, ...]
    recognise: Callable[[Any], bool]
    load: Callable[[Path, str], Iterator[Item]]
    skip_reason: str | None = None
