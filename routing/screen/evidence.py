"""Evidence entries: markdown files whose YAML front matter describes one published source about models.

One entry per file (``*.md`` in the ``--evidence`` folder, sorted by name; the body is for people)::

    ---
    title: A clinical QA leaderboard              # optional; the file name otherwise
    domain: [cardiology, endocrinology]           # what it covers (a list, or one word)
    genre: online_leaderboard                     # paper, benchmark, review, online_leaderboard, ...
    authority:
      institution_count: 120
      citation_count: {value: 850}                # or a bare number
      maintainers: [a lab, a hospital]
      update_cadence: monthly                     # live, monthly, quarterly, yearly, irregular, frozen
    methodology:
      contamination_controls: [held-out cases]    # a list, or true/false; none given: none
    models_ranked:
      - {model: Qwen2.5-72B-Instruct, rank: 1, axis: specialty, license: open, score: 0.81}
    expert_verdict:
      confidence: high                            # high, medium, low
    ---

``models_ranked`` rows: ``model`` (required), ``rank`` (an integer ≥ 1, optional), ``axis`` (optional; the
entry's own ``axis:`` when the row has none), ``license`` (optional, shown), ``score`` (optional: the
source's published score as a fraction in [0, 1], what the scenario report compares the best local
candidate with). Everything the formula reads is checked here; a wrong field is an
:class:`EvidenceError` naming ``file:line: field`` and what to write instead. Unknown fields are kept
out of the formula and never refused, so a richer entry still reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from routing.screen.formula import CONFIDENCES


class EvidenceError(ValueError):
    """An evidence entry the screen cannot read; the message names file:line: field and what to do."""


@dataclass(frozen=True)
class RankedRow:
    """One model a source ranks (a champion of its family)."""

    model: str
    rank: int | None
    axis: str | None
    license: str | None
    published: float | None  # the source's own score for it, a fraction
    line: int


@dataclass(frozen=True)
class EvidenceEntry:
    path: Path
    title: str
    domains: tuple[str, ...]
    genre: str | None
    institutions: float
    citations: float
    maintainers: int
    cadence: str | None
    contamination_controls: bool
    confidence: str | None
    rows: tuple[RankedRow, ...]


def _front_matter(path: Path) -> tuple[str, int]:
    """(the YAML between the opening and closing ``---`` lines, the file line of its first line)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise EvidenceError(f"{path}: cannot read ({exc}); an evidence entry is a UTF-8 markdown file") from None
    if not lines or lines[0].strip() != "---":
        raise EvidenceError(f"{path}:1: no front matter; start the file with a '---' line, the YAML, and '---'")
    for number, line in enumerate(lines[1:], 2):
        if line.strip() in ("---", "..."):
            return "\n".join(lines[1 : number - 1]), 2
    raise EvidenceError(f"{path}:1: the front matter is not closed; end the YAML with a '---' line")


class _Where:
    """Lines of a parsed front matter's fields: ``where.line("authority", "citation_count")``."""

    def __init__(self, path: Path, node: yaml.Node | None, offset: int) -> None:
        self.path, self.node, self.offset = path, node, offset

    def line(self, *keys: str | int) -> int:
        node = self.node
        line = node.start_mark.line if node is not None else 0
        for key in keys:
            child = None
            if isinstance(node, yaml.MappingNode):
                child = next((v for k, v in node.value if k.value == key), None)
            elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
                child = node.value[key]
            if child is None:
                break
            node, line = child, child.start_mark.line
        return line + self.offset

    def error(self, keys: tuple[str | int, ...], problem: str, todo: str) -> EvidenceError:
        field = "".join(f"[{k}]" if isinstance(k, int) else (f".{k}" if i else k) for i, k in enumerate(keys))
        return EvidenceError(f"{self.path}:{self.line(*keys)}: {field}: {problem}; {todo}")


def _number(value: Any, where: _Where, keys: tuple[str | int, ...]) -> float:
    if value is None:
        return 0.0
    if isinstance(value, dict):
        value = value.get("value")
        keys = (*keys, "value")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise where.error(keys, f"must be a number >= 0, got {value!r}", "write a count such as 120 (or omit it)")
    return float(value)


def _text(value: Any, where: _Where, keys: tuple[str | int, ...]) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise where.error(keys, f"must be a word, got {value!r}", "write one word or phrase")
    return str(value).strip() or None


def _mapping(data: dict[str, Any], key: str, where: _Where) -> dict[str, Any]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise where.error((key,), f"must be a mapping, got {type(value).__name__}", "indent its fields under it")
    return value


def _controls(value: Any) -> bool:
    """Whether the methodology declares contamination controls (a non-empty list, true, or a description)."""
    if isinstance(value, str):
        return value.strip().lower() not in ("", "none", "no", "false", "n/a")
    return bool(value)


def _rows(data: dict[str, Any], where: _Where) -> tuple[RankedRow, ...]:
    rows = data.get("models_ranked")
    if not isinstance(rows, list) or not rows:
        raise where.error(
            ("models_ranked",), "missing or empty", "list the models the source ranks: - {model: NAME, rank: 1}"
        )
    entry_axis = _text(data.get("axis"), where, ("axis",))
    out = []
    for i, row in enumerate(rows):
        keys: tuple[str | int, ...] = ("models_ranked", i)
        if not isinstance(row, dict) or not isinstance(row.get("model"), (str, int, float)) or row.get("model") == "":
            raise where.error((*keys, "model"), "missing", "give every ranked row a model name")
        rank = row.get("rank")
        if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 1):
            raise where.error((*keys, "rank"), f"must be an integer >= 1, got {rank!r}", "write 1 for the top model")
        published = row.get("score")
        if published is not None and (
            isinstance(published, bool) or not isinstance(published, (int, float)) or not 0 <= published <= 1
        ):
            raise where.error(
                (*keys, "score"),
                f"must be a fraction in [0, 1], got {published!r}",
                "write the published score as a fraction (87% is 0.87), or omit it",
            )
        out.append(
            RankedRow(
                model=str(row["model"]).strip(),
                rank=rank,
                axis=_text(row.get("axis"), where, (*keys, "axis")) or entry_axis,
                license=_text(row.get("license"), where, (*keys, "license")),
                published=None if published is None else float(published),
                line=where.line(*keys),
            )
        )
    return tuple(out)


def read_entry(path: Path) -> EvidenceEntry:
    """One evidence file, checked (module docstring)."""
    text, offset = _front_matter(path)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + offset if mark is not None else 1
        problem = getattr(exc, "problem", exc)
        raise EvidenceError(f"{path}:{line}: invalid YAML in the front matter ({problem}); fix it") from None
    where = _Where(path, node, offset)
    if not isinstance(data, dict):
        raise EvidenceError(f"{path}:{offset}: the front matter must be a mapping of fields (domain:, genre:, ...)")
    domains = data.get("domain")
    domains = [domains] if isinstance(domains, (str, int)) else domains or []
    if not isinstance(domains, list) or not all(isinstance(d, (str, int)) for d in domains):
        raise where.error(("domain",), "must be a list of words", "write domain: [cardiology, endocrinology]")
    authority = _mapping(data, "authority", where)
    maintainers = authority.get("maintainers") or []
    if isinstance(maintainers, str):
        maintainers = [maintainers]
    if not isinstance(maintainers, list):
        raise where.error(("authority", "maintainers"), "must be a list", "list the maintainers: [a lab, a hospital]")
    verdict = _mapping(data, "expert_verdict", where)
    confidence = _text(verdict.get("confidence"), where, ("expert_verdict", "confidence"))
    if confidence is not None and confidence.lower() not in CONFIDENCES:
        raise where.error(
            ("expert_verdict", "confidence"),
            f"unknown confidence {confidence!r}",
            f"use one of {', '.join(CONFIDENCES)}",
        )
    methodology = _mapping(data, "methodology", where)
    return EvidenceEntry(
        path=path,
        title=_text(data.get("title"), where, ("title",)) or path.stem,
        domains=tuple(str(d).strip() for d in domains if str(d).strip()),
        genre=_text(data.get("genre"), where, ("genre",)),
        institutions=_number(authority.get("institution_count"), where, ("authority", "institution_count")),
        citations=_number(authority.get("citation_count"), where, ("authority", "citation_count")),
        maintainers=len(maintainers),
        cadence=_text(authority.get("update_cadence"), where, ("authority", "update_cadence")),
        contamination_controls=_controls(methodology.get("contamination_controls")),
        confidence=confidence.lower() if confidence else None,
        rows=_rows(data, where),
    )


def read_evidence(folder: Path) -> list[EvidenceEntry]:
    """Every ``*.md`` entry of ``folder`` (sub-folders too), sorted by path."""
    if not folder.is_dir():
        raise EvidenceError(f"--evidence {folder}: not a folder; pass the folder of evidence entries (*.md)")
    paths = sorted(p for p in folder.rglob("*.md") if p.name.lower() != "readme.md")
    if not paths:
        raise EvidenceError(f"--evidence {folder}: no *.md entry there; write one per source (docs/screen.md)")
    return [read_entry(path) for path in paths]
