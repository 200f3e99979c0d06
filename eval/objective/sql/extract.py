"""Finding the SQL in an answer: fenced blocks first, bare statements otherwise, split into statements.

Answers wrap SQL in Markdown fences (```sql, sometimes unlabelled, sometimes never closed when the
answer was cut off) between prose, diagrams and example result tables; answers without fences
write the statement on its own lines. A block is split at semicolons outside quotes and comments;
a PL/SQL unit (DECLARE/BEGIN/CREATE PROCEDURE...) runs to a line holding only ``/`` or to the
block's end, and is kept whole, as one statement of kind ``plsql``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Kind = Literal["query", "dml", "plsql", "transaction", "other"]

SQL_FENCE_LANGUAGES = frozenset(
    {
        "sql",
        "plsql",
        "oracle",
        "oraclesql",
        "pl/sql",
        "mysql",
        "sqlite",
        "postgresql",
        "postgres",
        "pgsql",
        "tsql",
        "ansi",
        "sqlplus",
    }
)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_/+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_LEADING_NOISE = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.DOTALL)
_FIRST_WORD = re.compile(r"[(\s]*([A-Za-z]+)(?:\s+(OR\s+REPLACE\s+)?([A-Za-z]+))?", re.IGNORECASE)
_PLSQL_END = re.compile(r"^[ \t]*/[ \t]*$", re.MULTILINE)
_BARE_START = re.compile(r"^[ \t]*(SELECT|WITH|UPDATE|INSERT|DELETE|MERGE)\b", re.IGNORECASE | re.MULTILINE)
_SQL_START_WORDS = frozenset({"SELECT", "WITH", "UPDATE", "INSERT", "DELETE", "MERGE", "DECLARE", "BEGIN", "CREATE"})


@dataclass(frozen=True)
class Statement:
    text: str  # without the terminating ';'
    kind: Kind


@dataclass(frozen=True)
class SqlBlock:
    """One fenced block (or one bare statement) of an answer, in order of appearance."""

    index: int
    statements: tuple[Statement, ...]
    fenced: bool


def _strip_leading_noise(text: str) -> str:
    return text[_LEADING_NOISE.match(text).end() :]  # type: ignore[union-attr]


def statement_kind(text: str) -> Kind:
    """query (SELECT/WITH), dml (UPDATE/INSERT/DELETE/MERGE), plsql, transaction or other, by the
    first words after comments and opening parentheses."""
    match = _FIRST_WORD.match(_strip_leading_noise(text))
    if not match:
        return "other"
    first, second = match.group(1).upper(), (match.group(3) or "").upper()
    if first in ("SELECT", "WITH"):
        return "query"
    if first in ("UPDATE", "INSERT", "DELETE", "MERGE"):
        return "dml"
    if first in ("DECLARE", "BEGIN") or (
        first == "CREATE" and second in ("PROCEDURE", "FUNCTION", "TRIGGER", "PACKAGE", "TYPE")
    ):
        return "plsql"
    if first in ("COMMIT", "ROLLBACK", "SAVEPOINT") or (first == "SET" and second == "TRANSACTION"):
        return "transaction"
    return "other"


def _next_semicolon(text: str, start: int) -> int:
    """Index of the first ';' at or after ``start`` outside '...' / "..." / -- and /* */ comments, or len(text)."""
    index, length = start, len(text)
    while index < length:
        char = text[index]
        if char in "'\"":
            close = text.find(char, index + 1)
            while close != -1 and close + 1 < length and text[close + 1] == char:  # '' escapes a quote
                close = text.find(char, close + 2)
            index = length if close == -1 else close + 1
        elif text.startswith("--", index):
            end = text.find("\n", index)
            index = length if end == -1 else end + 1
        elif text.startswith("/*", index):
            end = text.find("*/", index + 2)
            index = length if end == -1 else end + 2
        elif char == ";":
            return index
        else:
            index += 1
    return length


def split_statements(block: str) -> list[Statement]:
    """The statements of one block, in order; empty pieces and lone '/' lines dropped."""
    out, position = [], 0
    while position < len(block):
        rest = block[position:]
        body = _strip_leading_noise(rest)
        start = position + len(rest) - len(body)
        if start >= len(block):
            break
        if statement_kind(body) == "plsql":
            end_match = _PLSQL_END.search(block, start)
            end = end_match.start() if end_match else len(block)
            out.append(Statement(block[start:end].strip(), "plsql"))
            position = end_match.end() if end_match else len(block)
            continue
        end = _next_semicolon(block, start)
        text = _PLSQL_END.sub("", block[start:end]).strip()
        if text:
            out.append(Statement(text, statement_kind(text)))
        position = end + 1
    return out


def _looks_like_sql(block: str) -> bool:
    match = _FIRST_WORD.match(_strip_leading_noise(block))
    return bool(match) and match.group(1).upper() in _SQL_START_WORDS  # type: ignore[union-attr]


def _bare_statements(text: str) -> list[str]:
    """Statements written without fences: from a line starting with SELECT/WITH/UPDATE/... to the
    next ';' (outside quotes) or the next blank line, whichever comes first."""
    out, position = [], 0
    while True:
        match = _BARE_START.search(text, position)
        if not match:
            return out
        start = match.start(1)
        semicolon = _next_semicolon(text, start)
        blank = re.search(r"\n[ \t]*\n", text[start:])
        end = min(semicolon, start + blank.start() if blank else len(text))
        out.append(text[start:end])
        position = end + 1


def find_sql_blocks(answer: str) -> list[SqlBlock]:
    """The SQL blocks of an answer, in order: fenced SQL blocks (labelled as SQL, or unlabelled and
    starting with an SQL keyword); when there are none, each bare statement is a block of its own."""
    blocks = []
    for match in _FENCE.finditer(answer):
        language, body = match.group(1).lower(), match.group(2)
        if language in SQL_FENCE_LANGUAGES or (not language and _looks_like_sql(body)):
            statements = split_statements(body)
            if statements:
                blocks.append(SqlBlock(len(blocks), tuple(statements), fenced=True))
    if blocks:
        return blocks
    unfenced = _FENCE.sub("", answer)
    for text in _bare_statements(unfenced):
        statements = split_statements(text)
        if statements:
            blocks.append(SqlBlock(len(blocks), tuple(statements), fenced=False))
    return blocks
