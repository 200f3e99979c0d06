"""The judged rows as columns: what judge reliability audits of each verdict, in numpy arrays.

A judged row's ``details`` are nested JSON (parse stage, flags, side labels, a panel's votes); a
night holds hundreds of thousands of them. Kept as dicts they cost a JSON parse and about a
kilobyte each, and every statistic over them is a Python walk. Here each is a few numbers, one
array per field, with the few distinct values (flag sets, side labels, member names) once in a
vocabulary:

- ``row`` — the row (of the run, then of the merged table) the verdict belongs to: status, family,
  task, domain, value, pass and sub-metrics are read from the table's own columns;
- ``judge`` — index into ``judge_records``, the ``judge`` objects as the rows wrote them;
- ``stage`` — the parse-ladder outcome (:data:`LADDER` index, -1 none: :func:`parse_stage_of`);
- ``primary_check`` — the row's value is an objective check's (``details.primary == "check"``);
- ``context`` / ``behavior`` — index into ``side_values`` of ``details.context_awareness`` /
  ``details.behavior`` as written (None included), -1 when the row has no such field;
- ``flags`` / ``dropped`` — index into ``flag_sets`` / ``dropped_sets``: the verdict's distinct
  string flags in order, and its distinct ``judge_flag_dropped`` claims as strings;
- ``variant`` — which score the verdict's value is (``details.score_variant``): index into
  :data:`SCORE_VARIANTS` (weighted by the judge's token probabilities, argmax, or a panel's mix of
  both), -1 when the row does not say;
- ``panel_rule`` — index into ``rules`` of a panel verdict's rule, -1 for a verdict without a panel
  block; ``members`` — how many member votes it lists, laid out flat in ``member_name`` (index into
  ``member_names``), ``member_passed`` (1.0 / 0.0, NaN: no vote) and ``member_total`` (NaN: none);
- ``rejudge`` — the few re-judged verdicts' ``details.rejudge`` records by row (a sample, not a column).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

LADDER = ("strict", "repaired", "patterns", "reasked", "failed", "call_failed")
VERDICT_STAGES = LADDER[:4]  # the judge's reply was read: a verdict
SCORE_VARIANTS = ("weighted", "argmax", "mixed")  # details.score_variant (judge.weighting, pool.score.panel)
ARRAYS = {  # field -> dtype on disk, one value per judged row
    "row": "<i8",
    "judge": "<i4",
    "stage": "i1",
    "primary_check": "u1",
    "variant": "i1",
    "context": "<i4",
    "behavior": "<i4",
    "flags": "<i4",
    "dropped": "<i4",
    "panel_rule": "<i4",
    "members": "<i4",
}
MEMBER_ARRAYS = {"member_name": "<i4", "member_passed": "<f8", "member_total": "<f8"}  # one value per member vote
DTYPES = {**ARRAYS, **MEMBER_ARRAYS}
VOCABS = ("side_values", "flag_sets", "dropped_sets", "rules", "member_names")
_TYPECODES = {"<i8": "q", "<i4": "i", "i1": "b", "u1": "B", "<f8": "d"}


def parse_stage_of(row: Mapping[str, Any]) -> str | None:
    """The parse-ladder outcome of one judged row (:data:`LADDER`), None for judge-free rows."""
    if row.get("judge") is None:
        return None
    details = row.get("details") or {}
    if row["status"] == "infra_error" or "judge_error" in details:  # judge_error: an objective check kept the score
        failure = details.get("judge_error", details)
        if failure.get("error") != "judge_no_verdict":
            return None  # no answer to judge: not the judge's doing
        return "call_failed" if str(failure.get("reason", "")).startswith("judge call failed") else "failed"
    if details.get("reasked"):
        return "reasked"
    stage = details.get("parse_stage")
    return stage if stage in ("strict", "repaired", "patterns") else None


def _scalar(value: Any) -> Any:
    """A JSON value as a vocabulary key: strings and None as they are, anything else as its JSON text."""
    return value if value is None or isinstance(value, str) else json.dumps(value, sort_keys=True)


class _Vocab:
    def __init__(self) -> None:
        self.values: list[Any] = []
        self.index: dict[Any, int] = {}

    def code(self, value: Any) -> int:
        found = self.index.get(value)
        if found is None:
            found = self.index[value] = len(self.values)
            self.values.append(value)
        return found


def _native(dtype: str) -> np.dtype:
    return np.dtype(dtype.replace("<", "="))


@dataclass
class JudgedColumns:
    """Judged rows as arrays of equal length (member votes flat, ``members`` per row); see the module doc."""

    row: np.ndarray
    judge: np.ndarray
    stage: np.ndarray
    primary_check: np.ndarray
    variant: np.ndarray
    context: np.ndarray
    behavior: np.ndarray
    flags: np.ndarray
    dropped: np.ndarray
    panel_rule: np.ndarray
    members: np.ndarray
    member_name: np.ndarray
    member_passed: np.ndarray
    member_total: np.ndarray
    judge_records: list[Any] = field(default_factory=list)
    side_values: list[Any] = field(default_factory=list)
    flag_sets: list[tuple[str, ...]] = field(default_factory=list)
    dropped_sets: list[tuple[str, ...]] = field(default_factory=list)
    rules: list[Any] = field(default_factory=list)
    member_names: list[Any] = field(default_factory=list)
    rejudge: dict[int, dict[str, Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.row.shape[0])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, JudgedColumns):
            return NotImplemented
        return all(
            np.array_equal(getattr(self, a), getattr(other, a), equal_nan=a in ("member_passed", "member_total"))
            for a in DTYPES
        ) and all(getattr(self, v) == getattr(other, v) for v in ("judge_records", *VOCABS, "rejudge"))

    @classmethod
    def empty(cls) -> JudgedColumns:
        return cls(**{a: np.zeros(0, dtype=_native(d)) for a, d in DTYPES.items()})

    def member_starts(self) -> np.ndarray:
        """Offset of each row's first member vote in the flat member arrays (length len + 1)."""
        return np.concatenate([[0], np.cumsum(self.members, dtype=np.int64)])

    def member_votes(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(flat index of every member vote of the rows at ``positions``, the position's index in ``positions``)."""
        counts = self.members[positions].astype(np.int64)
        starts = self.member_starts()[positions]
        ends = np.cumsum(counts)
        flat = np.repeat(starts - (ends - counts), counts) + np.arange(int(ends[-1]) if len(ends) else 0)
        return flat, np.repeat(np.arange(len(positions)), counts)

    def take(self, positions: np.ndarray, rows: np.ndarray | None = None) -> JudgedColumns:
        """The rows at ``positions`` (in that order), their ``row`` replaced by ``rows`` when given."""
        positions = np.asarray(positions, dtype=np.int64)
        flat, _ = self.member_votes(positions)
        new_rows = self.row[positions] if rows is None else np.asarray(rows, dtype=np.int64)
        renamed = dict(zip(self.row[positions].tolist(), new_rows.tolist(), strict=True)) if self.rejudge else {}
        return JudgedColumns(
            **{a: getattr(self, a)[positions] for a in ARRAYS if a != "row"},
            row=new_rows,
            **{a: getattr(self, a)[flat] for a in MEMBER_ARRAYS},
            judge_records=self.judge_records,
            **{v: getattr(self, v) for v in VOCABS},
            rejudge={renamed[r]: record for r, record in self.rejudge.items() if r in renamed},
        )

    @classmethod
    def concat(cls, parts: Sequence[JudgedColumns]) -> JudgedColumns:
        """The parts one after the other, their vocabularies (and judge records) merged."""
        if not parts:
            return cls.empty()
        vocabs = {v: _Vocab() for v in VOCABS}
        records = _Vocab()
        by_key: dict[str, Any] = {}
        recoded: list[dict[str, np.ndarray]] = []
        for part in parts:
            out: dict[str, np.ndarray] = {}
            for name, vocab in (
                ("context", "side_values"),
                ("behavior", "side_values"),
                ("flags", "flag_sets"),
                ("dropped", "dropped_sets"),
                ("panel_rule", "rules"),
                ("member_name", "member_names"),
            ):
                out[name] = _recode(getattr(part, name), [vocabs[vocab].code(v) for v in getattr(part, vocab)])
            keys = [json.dumps(r, sort_keys=True, default=str) for r in part.judge_records]
            by_key.update(zip(keys, part.judge_records, strict=True))
            out["judge"] = _recode(part.judge, [records.code(k) for k in keys])
            recoded.append(out)
        return cls(
            **{
                a: np.concatenate([out.get(a, getattr(part, a)) for part, out in zip(parts, recoded, strict=True)])
                for a in DTYPES
            },
            judge_records=[by_key[k] for k in records.values],
            **{v: vocabs[v].values for v in VOCABS},
            rejudge={r: record for part in parts for r, record in part.rejudge.items()},
        )

    def vocab_json(self) -> dict[str, Any]:
        """The vocabularies as JSON (the arrays go to files of their own)."""
        return {v: [list(x) if isinstance(x, tuple) else x for x in getattr(self, v)] for v in VOCABS}


def _recode(column: np.ndarray, mapping: Sequence[int]) -> np.ndarray:
    """Codes into one vocabulary as codes into another (-1 stays -1)."""
    table = np.asarray([*mapping, -1], dtype=np.int32)  # code -1 lands on the trailing -1
    return table[column] if len(column) else column.astype(np.int32)


class JudgedBuilder:
    """Judged rows appended one at a time; :meth:`take` hands over those added since the last take
    (the vocabularies grow across takes, so chunks written one after another share them)."""

    def __init__(self) -> None:
        self.vocabs = {v: _Vocab() for v in VOCABS}
        self._reset()

    def _reset(self) -> None:
        self.arrays = {a: array(_TYPECODES[d]) for a, d in DTYPES.items()}
        self.rejudge: dict[int, dict[str, Any]] = {}

    def add(self, row_index: int, judge: int, row: Mapping[str, Any]) -> None:
        """One judged row (as ``scores.jsonl`` holds it), ``row_index`` its row, ``judge`` its judge record's index."""
        a, codes = self.arrays, self.vocabs
        details = row.get("details") or {}
        stage = parse_stage_of(row)
        a["row"].append(row_index)
        a["judge"].append(judge)
        a["stage"].append(-1 if stage is None else LADDER.index(stage))
        a["primary_check"].append(details.get("primary") == "check")
        variant = details.get("score_variant")
        a["variant"].append(SCORE_VARIANTS.index(variant) if variant in SCORE_VARIANTS else -1)
        for name, key in (("context", "context_awareness"), ("behavior", "behavior")):
            a[name].append(codes["side_values"].code(_scalar(details[key])) if key in details else -1)
        flags = tuple(f for f in dict.fromkeys(details.get("flags") or ()) if isinstance(f, str))
        a["flags"].append(codes["flag_sets"].code(flags))
        dropped = tuple(str(f) for f in dict.fromkeys(details.get("judge_flag_dropped") or ()))
        a["dropped"].append(codes["dropped_sets"].code(dropped))
        panel = details.get("panel")
        is_panel = isinstance(panel, Mapping)
        members = (panel.get("members") or ()) if is_panel else ()
        a["panel_rule"].append(codes["rules"].code(_scalar(panel.get("rule"))) if is_panel else -1)
        a["members"].append(len(members))
        for member in members:
            passed, total = member.get("passed"), member.get("total")
            a["member_name"].append(codes["member_names"].code(_scalar(member.get("name"))))
            a["member_passed"].append(np.nan if passed is None else float(bool(passed)))
            a["member_total"].append(np.nan if total is None else float(total))
        if isinstance(details.get("rejudge"), dict):
            self.rejudge[row_index] = details["rejudge"]

    def take(self, judge_records: list[Any]) -> JudgedColumns:
        """The rows added since the last take, with the vocabularies so far."""
        out = JudgedColumns(
            **{a: np.frombuffer(v, dtype=_native(DTYPES[a])).copy() for a, v in self.arrays.items()},
            judge_records=judge_records,
            **{v: list(self.vocabs[v].values) for v in VOCABS},
            rejudge=self.rejudge,
        )
        self._reset()
        return out


def from_files(meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray], judge_records: list[Any]) -> JudgedColumns:
    """A :class:`JudgedColumns` from its vocabularies (``meta``) and its arrays as read from disk."""
    vocab: dict[str, list[Any]] = {v: list(meta.get(v, ())) for v in VOCABS}
    for name in ("flag_sets", "dropped_sets"):
        vocab[name] = [tuple(x) for x in vocab[name]]
    return JudgedColumns(
        **{a: arrays[a].astype(_native(d), copy=False) for a, d in DTYPES.items()},
        judge_records=judge_records,
        **vocab,
    )
