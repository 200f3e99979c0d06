"""The loaded scores as columns: one row per (entrant, item), numbers in numpy arrays.

An *entrant* is what one leaderboard row stands for: a model identity (``model_identity`` of a
``scores.jsonl`` row: name, backend, backend_type, endpoint, model, every generation setting, gguf,
chat_format — whatever fields the row carries) together with the judge identity that scored it
(``None`` for judge-free scores). Rows of two entrants are never
merged: the same pool name run on another backend, at another temperature or with thinking on is a
different model, and the same answers graded by another judge (or another prompt version) are
different scores. When a name is ambiguous the label says how (``name [backend=ollama]``,
``name | judge j@b#v``); otherwise the label is the pool name.

Categorical columns (family, task, domain, system, broad_area, gold_type, suite) are integer codes
into a vocabulary, so grouping is one ``argsort`` rather than a dict walk per row. ``system`` is the
part of each domain before ``:``; ``broad_area`` (内科 / 精神科 / ..., :mod:`eval.items.broad_areas`) is the
area the row recorded, else the one its task, suite and system give — both found per vocabulary
entry and gathered, never per row in Python.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from eval.items.broad_areas import OTHER, area_of_source, area_of_system
from eval.items.scores import JudgeIdentity

STATUSES = ("scored", "infra_error", "unscorable")
SCORED, INFRA_ERROR, UNSCORABLE = 0, 1, 2
NO_DOMAIN = "(none)"
CATEGORIES = ("family", "task", "domain", "system", "broad_area", "gold_type", "suite")
NOT_RECORDED = ""  # the broad_area code of a row written without one: derived when the table is built


@dataclass(frozen=True)
class ModelIdentity:
    """A model as the pool ran it; two identities differing in any field are two models."""

    name: str
    fields: tuple[tuple[str, Any], ...]  # every identity field, sorted by field name

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> ModelIdentity:
        return cls(name=str(record["name"]), fields=tuple(sorted(record.items())))

    def as_dict(self) -> dict[str, Any]:
        return dict(self.fields)

    @cached_property
    def key(self) -> str:
        """sha256 prefix of the canonical JSON of every field: stable across runs and machines (made
        once per identity: decisions ask for it per contestant and per tie-break)."""
        blob = json.dumps(self.as_dict(), sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Entrant:
    model: ModelIdentity
    judge: JudgeIdentity | None
    model_label: str  # the model's display name, disambiguated among identities sharing a name
    label: str  # model_label, plus the judge when the model was scored by more than one judge

    @property
    def judge_key(self) -> str | None:
        return None if self.judge is None else self.judge.key()


def _identity_labels(identities: Sequence[ModelIdentity]) -> dict[ModelIdentity, str]:
    """The pool name, or ``name [field=value, ...]`` listing the fields that tell same-named models apart."""
    by_name: dict[str, list[ModelIdentity]] = {}
    for identity in identities:
        by_name.setdefault(identity.name, []).append(identity)
    labels: dict[ModelIdentity, str] = {}
    for name, group in by_name.items():
        if len(group) == 1:
            labels[group[0]] = name
            continue
        keys = sorted({k for ident in group for k, _ in ident.fields})
        differing = [k for k in keys if len({json.dumps(ident.as_dict().get(k), default=str) for ident in group}) > 1]
        for ident in group:
            values = ident.as_dict()
            detail = ", ".join(f"{k}={_shown(values.get(k))}" for k in differing if k != "name")
            labels[ident] = f"{name} [{detail}]" if detail else f"{name} [{ident.key}]"
    if len(set(labels.values())) != len(labels):  # two identities still rendered alike: fall back to the key
        labels = {ident: f"{label} #{ident.key}" for ident, label in labels.items()}
    return labels


def _shown(value: Any) -> str:
    """An identity value in a label: lists (stored as tuples) as JSON, anything else as text."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, (list, tuple)) else str(value)


def make_entrants(pairs: Sequence[tuple[ModelIdentity, JudgeIdentity | None]]) -> list[Entrant]:
    """Entrants for (identity, judge) pairs, in the given order, with unambiguous labels."""
    model_labels = _identity_labels(list(dict.fromkeys(identity for identity, _ in pairs)))
    judges_of: dict[ModelIdentity, set[str]] = {}
    for identity, judge in pairs:
        if judge is not None:
            judges_of.setdefault(identity, set()).add(judge.key())
    entrants = []
    for identity, judge in pairs:
        label = model_labels[identity]
        if judge is not None and len(judges_of[identity]) > 1:
            label = f"{label} | judge {judge.key()}"
        entrants.append(Entrant(identity, judge, model_labels[identity], label))
    return entrants


@dataclass(frozen=True)
class ScoreTable:
    """Columns of equal length N (one entry per row); see the module docstring."""

    entrants: tuple[Entrant, ...]
    items: tuple[str, ...]
    vocab: Mapping[str, tuple[str, ...]]  # category -> names; codes index into these
    entrant: np.ndarray  # int32 index into entrants
    item: np.ndarray  # int32 index into items
    family: np.ndarray  # int32 codes (likewise task, domain, system, gold_type, suite)
    task: np.ndarray
    domain: np.ndarray
    system: np.ndarray
    gold_type: np.ndarray
    suite: np.ndarray
    status: np.ndarray  # int8: SCORED, INFRA_ERROR, UNSCORABLE
    value: np.ndarray  # float64 in [0, 1]; NaN unless scored
    passed: np.ndarray  # float64 1/0; NaN when null
    latency_s: np.ndarray  # float64; NaN when null
    completion_tokens: np.ndarray  # float64; NaN when null
    run: np.ndarray  # int16 index of the run the row came from
    # sub-metric name -> float column, NaN where absent; float32 when every value is exactly one (judge
    # dimensions, counts), so readers widen to float64 before arithmetic (comparisons need not)
    metrics: Mapping[str, np.ndarray]
    flags: Mapping[str, np.ndarray]  # specialty audit columns (routing.load.rows.FLAG_COLUMNS), as metrics
    labels: Mapping[int, tuple[Any, Any, tuple[Any, ...]]] = field(default_factory=dict)
    # row -> (predicted_label, gold_label, label set) for classification rows
    answered: np.ndarray | None = None  # bool: the answer was obtained; None = every non-infra_error row
    sources: Mapping[str, str] = field(default_factory=dict)  # derived item id -> the item it was built from
    cost: np.ndarray | None = None  # float64: the answer's cost at the pool's prices; NaN when unpriced
    # int32 codes of vocab["broad_area"]; None (a table built in memory without it): derived from
    # task, suite and system as for rows that recorded none (see broad_area_column)
    broad_area: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.broad_area is None:
            codes, names = broad_area_column(self.vocab, self.task, self.suite, self.system)
            object.__setattr__(self, "broad_area", codes)
            object.__setattr__(self, "vocab", {**self.vocab, "broad_area": names})

    def __len__(self) -> int:
        return int(self.entrant.shape[0])

    def names(self, category: str) -> tuple[str, ...]:
        return self.vocab[category]

    def code(self, category: str, name: str) -> int:
        return self.vocab[category].index(name)


def intern(values: Sequence[str]) -> tuple[np.ndarray, tuple[str, ...]]:
    """(int32 codes, sorted vocabulary) for a column of strings."""
    vocab = tuple(sorted(set(values)))
    index = {name: i for i, name in enumerate(vocab)}
    return np.fromiter(map(index.__getitem__, values), dtype=np.int32, count=len(values)), vocab


def broad_area_column(
    vocab: Mapping[str, Sequence[str]],
    task: np.ndarray,
    suite: np.ndarray,
    system: np.ndarray,
    recorded: tuple[np.ndarray, Sequence[str]] | None = None,
) -> tuple[np.ndarray, tuple[str, ...]]:
    """(int32 codes, sorted vocabulary) of every row's broad area: the ``recorded`` one (codes into
    names, :data:`NOT_RECORDED` where a row has none), else the area of its task, then of its suite,
    then of its system (:mod:`eval.items.broad_areas`), else ``other``. Each rule is looked up once per
    vocabulary entry and gathered with numpy, so a million rows cost a few array passes — none when
    every row recorded its area in a sorted vocabulary (what ``pool.run`` writes and the loader keeps)."""
    if recorded is not None and NOT_RECORDED not in recorded[1]:
        codes, recorded_names = recorded
        if list(recorded_names) == sorted(recorded_names):
            return codes.astype(np.int32, copy=False), tuple(recorded_names)
    names: dict[str, int] = {}

    def lookup(values: Sequence[str], area_of: Any, fallback: str | None = None) -> np.ndarray:
        areas = [area_of(value) or fallback for value in values]
        return np.array([names.setdefault(a, len(names)) if a else -1 for a in areas], dtype=np.int32)

    def derived() -> np.ndarray:
        out = lookup(vocab["system"], area_of_system, OTHER)[system] if len(system) else np.zeros(0, dtype=np.int32)
        for by_source, column in (
            (lookup(vocab["suite"], area_of_source), suite),
            (lookup(vocab["task"], area_of_source), task),
        ):
            if (by_source >= 0).any():  # the task outranks the suite, which outranks the system: applied last
                found = by_source[column]
                out = np.where(found >= 0, found, out)
        return out

    if recorded is None:
        area = derived()
    else:
        codes, recorded_names = recorded
        mapped = np.array(
            [-1 if name == NOT_RECORDED else names.setdefault(name, len(names)) for name in recorded_names],
            dtype=np.int32,
        )
        area = mapped[codes] if (mapped >= 0).all() else np.where(mapped[codes] >= 0, mapped[codes], derived())
    name_of = dict(zip(names.values(), names, strict=True))
    vocabulary = sorted(name_of[code] for code in codes_in_use(area, len(names)).tolist())  # the names some row has
    remap = np.zeros(max(len(names), 1), dtype=np.int32)
    remap[[names[name] for name in vocabulary]] = np.arange(len(vocabulary), dtype=np.int32)
    return remap[area], tuple(vocabulary)


def codes_in_use(codes: np.ndarray, size: int) -> np.ndarray:
    """The distinct codes (each in [0, size)) of a column, ascending: ``np.unique`` by counting, no sort of the rows."""
    return np.flatnonzero(np.bincount(codes, minlength=size)) if len(codes) else np.zeros(0, dtype=np.int64)


def group_rows(
    keys: Sequence[np.ndarray], order_by: np.ndarray | None = None
) -> list[tuple[tuple[int, ...], np.ndarray]]:
    """Row indices grouped by equal key tuples, groups in key order; inside a group rows follow ``order_by``."""
    if not len(keys[0]):
        return []
    sort_keys = ([order_by] if order_by is not None else []) + list(reversed(keys))
    order = np.lexsort(sort_keys)
    stacked = np.stack([k[order] for k in keys], axis=1)
    breaks = np.flatnonzero((stacked[1:] != stacked[:-1]).any(axis=1)) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(order)]])
    return [(tuple(int(x) for x in stacked[s]), order[s:e]) for s, e in zip(starts, ends, strict=True)]


def common_items(table: ScoreTable) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Rows kept by ``--common``, and the entrants left out of a task's comparison.

    Per (family, task) the entrants compared are those with at least one ``scored`` row there; an
    item survives when each of them has a ``scored`` row for it. A row whose answer was never
    obtained (``infra_error``, including ``model_failed`` for a model given up on) is an absent
    answer, so an entrant with no scored row in a task — every answer failed, or no verdict came
    back — is left out of that task's comparison and listed as ``{"family", "task", "model",
    "reason"}`` instead of emptying the task for everyone else. Comparing per task, not over the
    whole run, keeps a model that skipped a whole task from emptying the tasks it did run.
    """
    answered = table.answered if table.answered is not None else table.status != INFRA_ERROR
    families, tasks = table.names("family"), table.names("task")
    keep = np.zeros(len(table), dtype=bool)
    left_out: list[dict[str, Any]] = []
    for (family, task), rows in group_rows([table.family, table.task]):
        scored = rows[table.status[rows] == SCORED]
        compared = np.unique(table.entrant[scored])
        for entrant in np.setdiff1d(np.unique(table.entrant[rows]), compared):
            mine = rows[table.entrant[rows] == entrant]
            reason = (
                "no answer obtained (every answer an infra_error, e.g. model_failed)"
                if not answered[mine].any()
                else "no scored item (answers obtained, none scored)"
            )
            left_out.append(
                {
                    "family": families[family],
                    "task": tasks[task],
                    "model": table.entrants[int(entrant)].label,
                    "reason": reason,
                }
            )
        pairs = np.unique(np.stack([table.item[scored], table.entrant[scored]]), axis=1)
        items, count = np.unique(pairs[0], return_counts=True)
        complete = items[count == len(compared)]
        keep[rows] = np.isin(table.item[rows], complete)
    return keep, left_out


def common_items_mask(table: ScoreTable) -> np.ndarray:
    """The rows :func:`common_items` keeps."""
    return common_items(table)[0]
