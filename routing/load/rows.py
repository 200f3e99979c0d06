"""One ``scores.jsonl`` row, checked: the row format's rules and the one-line-at-a-time reader.

A row that breaks a rule raises :class:`LoadError` naming ``path:line: field: problem``. Both
readers of a run — :mod:`routing.load.columns` (a run's columns) and the nightly index's one-pass
digest — take rows from :func:`iter_checked_rows`, so they accept and refuse the same files.

``broad_area`` (内科, 精神科, ...; :mod:`eval.items.broad_areas`) is optional: a row without it gets the area
its task, suite and domain give when the table is built (:func:`routing.load.table.broad_area_column`).

``answered`` per row: the answer was obtained (``answer_status`` is not ``infra_error``). Rows
without ``answer_status`` count as unanswered when they are an ``infra_error`` with no judge (the
only way a judge-free row fails), answered otherwise.

Audit columns read from ``details`` for the specialty leaderboard (absent keys leave NaN):

- ``safety_floor``: ``details["safety_floor"]`` — true (or a non-empty list of the forbidden phrases
  found) when the deterministic safety floor capped the score; rate = floored answers / answers.
- ``claims_unsupported`` / ``claims_total``: ``details["claims"] = {"supported", "unsupported",
  "not_sure"}`` counts from the claim-level check; unsupported rate = Σunsupported / Σclaims.
- ``grounding_unsupported``: ``details["grounding"]`` (or ``"grounding_source"``) equal to
  ``"unsupported"``; used for the unsupported rate when no claim counts are present.
- ``truncated``: ``details["answer_flaw"] == "truncated"`` (the answer was cut at its token budget);
  every leaderboard cell counts them beside its score.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from eval.gold_types import primary_metric_of
from eval.items.broad_areas import name_problem as broad_area_problem
from eval.items.scores import FAMILIES, JUDGE_NAMED_FIELDS, JudgeIdentity, frozen_json
from routing.load.table import NO_DOMAIN, STATUSES, ModelIdentity

__all__ = ["NO_DOMAIN"]

SCORES_FILENAME = "scores.jsonl"
FLAG_COLUMNS = ("safety_floor", "claims_unsupported", "claims_total", "grounding_unsupported", "truncated")
REQUIRED_STR = ("model", "item_id", "task", "gold_type")
STATUS_CODE = {name: code for code, name in enumerate(STATUSES)}
INFRA_CODE = STATUS_CODE["infra_error"]


class LoadError(ValueError):
    """A run file that cannot be read; the message starts with ``path[:line]``."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_row(row: Any) -> str | None:
    """What is wrong with one scores.jsonl row (``field: problem``), or None.

    The values inside ``model_identity`` and ``judge.identity`` are checked once per distinct
    object, when :class:`IdentityInterner` first meets it (a million rows hold a handful of identities).
    """
    if not isinstance(row, dict):
        return f"row: expected a JSON object, got {type(row).__name__}"
    for key in REQUIRED_STR:
        if not isinstance(row.get(key), str) or not row[key]:
            return f"{key}: must be a non-empty string"
    if row.get("family") not in FAMILIES:
        return f"family: must be one of {', '.join(FAMILIES)}, got {row.get('family')!r}"
    if row.get("status") not in STATUSES:
        return f"status: must be one of {', '.join(STATUSES)}, got {row.get('status')!r}"
    value = row.get("value")
    if row["status"] == "scored" and not (_number(value) and 0.0 <= value <= 1.0):
        return f"value: a scored row needs a number in [0, 1], got {value!r}"
    if row["status"] != "scored" and value is not None:
        return f"value: a {row['status']} row carries no value (null), got {value!r}"
    if row.get("passed") not in (True, False, None):
        return f"passed: must be true, false or null, got {row.get('passed')!r}"
    if row.get("domain") is not None and not isinstance(row["domain"], str):
        return "domain: must be a string or null"
    if row.get("broad_area") is not None and (problem := broad_area_problem(row["broad_area"])):
        return f"broad_area: {problem}, or null (then derived from the task, suite and domain)"
    identity = row.get("model_identity")
    if not isinstance(identity, dict) or not isinstance(identity.get("name"), str):
        return "model_identity: must be an object with at least 'name' (name, backend, model, temperature, ...)"
    if identity["name"] != row["model"]:
        return f"model_identity.name: {identity['name']!r} differs from model {row['model']!r}"
    judge = row.get("judge")
    if judge is not None and not (
        isinstance(judge, dict) and all(isinstance(judge.get(k), str) for k in ("model", "backend", "prompt_version"))
    ):
        return "judge: must be null or an object with string model, backend, prompt_version"
    if row.get("answer_status") not in (None, "ok", "error", "infra_error"):
        return f"answer_status: must be ok, error, infra_error or absent, got {row.get('answer_status')!r}"
    for key in ("metrics", "details"):
        if not isinstance(row.get(key, {}), dict):
            return f"{key}: must be an object"
    for name, metric in row.get("metrics", {}).items():
        if metric is not None and not _number(metric):
            return f"metrics.{name}: must be a finite number or null, got {metric!r}"
    for key in ("latency_s", "completion_tokens", "cost"):
        if row.get(key) is not None and not _number(row[key]):
            return f"{key}: must be a number or null, got {row[key]!r}"
    if "source_item_id" in row and not (isinstance(row["source_item_id"], str) and row["source_item_id"]):
        return f"source_item_id: must be the id of the item this one was built from, got {row['source_item_id']!r}"
    return None


def _identity_values(where: str, fields: Mapping[str, Any]) -> str | None:
    """An identity field must be a JSON scalar or a list of them (it is compared and hashed whole)."""
    for name, value in fields.items():
        if isinstance(value, list):
            if any(isinstance(v, (list, dict)) for v in value):
                return f"{where}.{name}: a list of strings or numbers expected, got {value!r}"
        elif isinstance(value, dict):
            return f"{where}.{name}: a string, number, boolean, null or list expected, got an object"
    return None


def _judge_problem(judge: Mapping[str, Any]) -> str | None:
    """What is wrong with a ``judge`` object's ``identity`` (the named fields are already checked)."""
    full = judge.get("identity")
    if full is None:
        return None
    if not isinstance(full, dict):
        return "judge.identity: must be an object (every field of the judge's identity)"
    for field, top in zip(JUDGE_NAMED_FIELDS, ("model", "backend", "prompt_version"), strict=True):
        if field in full and full[field] != judge[top]:
            return f"judge.identity.{field}: {full[field]!r} differs from judge.{top} {judge[top]!r}"
    return _identity_values("judge.identity", full)


def answered(row: Mapping[str, Any]) -> bool:
    """Whether the row's answer was obtained (see the module docstring for rows without answer_status)."""
    if row.get("answer_status") is not None:
        return bool(row["answer_status"] != "infra_error")
    return not (row["status"] == "infra_error" and row.get("judge") is None)


def flags_of(details: Mapping[str, Any]) -> tuple[float, float, float, float, float]:
    """The FLAG_COLUMNS of one row (NaN where the detail is absent)."""
    floor = unsupported = total = grounded = math.nan
    if details.get("safety_floor") is not None:
        floor = float(bool(details["safety_floor"]))
    claims = details.get("claims")
    if isinstance(claims, dict) and all(_number(claims.get(k, 0)) for k in ("supported", "unsupported", "not_sure")):
        unsupported = float(claims.get("unsupported", 0))
        total = float(sum(claims.get(k, 0) for k in ("supported", "unsupported", "not_sure")))
    grounding = details.get("grounding", details.get("grounding_source"))
    if isinstance(grounding, str):
        grounded = float(grounding == "unsupported")
    return floor, unsupported, total, grounded, float(details.get("answer_flaw") == "truncated")


def label_of(row: Mapping[str, Any]) -> tuple[Any, Any, tuple[Any, ...]] | None:
    details = row.get("details", {})
    if primary_metric_of(row["gold_type"]) != "macro_f1" or row["status"] != "scored" or "gold_label" not in details:
        return None
    declared = details.get("labels") if isinstance(details.get("labels"), list) else []
    return details.get("predicted_label"), details["gold_label"], tuple(declared)


def _raw_key(record: Mapping[str, Any]) -> Any:
    """A cheap hashable stand-in for an identity object as read (lists of scalars become tuples)."""
    try:
        raw = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in record.items())
        hash(raw)
    except TypeError:  # a value check_row let through but that still does not hash: its JSON text
        return json.dumps(record, sort_keys=True, default=str)
    return raw


class _IdentityError(ValueError):
    """A model or judge identity object that cannot be used; the message is ``field: problem``."""


class IdentityInterner:
    """Shared objects for repeated values, so a million rows hold a few identities and strings."""

    def __init__(self) -> None:
        self.identities: list[ModelIdentity] = []
        self.judges: list[JudgeIdentity | None] = [None]
        self._identity_ids: dict[Any, int] = {}
        self._raw_identity_ids: dict[Any, int] = {}
        self._judge_ids: dict[Any, int] = {None: 0}
        self._raw_judge_ids: dict[Any, int] = {}
        self._strings: dict[str, str] = {}

    def identity(self, record: Mapping[str, Any]) -> int:
        raw = _raw_key(record)
        found = self._raw_identity_ids.get(raw)
        if found is None:
            problem = _identity_values("model_identity", record)
            if problem:
                raise _IdentityError(problem)
            identity = ModelIdentity.from_record({k: frozen_json(v) for k, v in record.items()})
            found = self._identity_ids.setdefault(identity, len(self._identity_ids))
            if found == len(self.identities):
                self.identities.append(identity)
            self._raw_identity_ids[raw] = found
        return found

    def judge(self, record: Mapping[str, Any] | None) -> int:
        if record is None:
            return 0
        raw = (record["model"], record["backend"], record["prompt_version"], _raw_key(record.get("identity") or {}))
        found = self._raw_judge_ids.get(raw)
        if found is None:
            problem = _judge_problem(record)
            if problem:
                raise _IdentityError(problem)
            identity = JudgeIdentity.from_record(record)
            found = self._judge_ids.setdefault(identity, len(self.judges))
            if found == len(self.judges):
                self.judges.append(identity)
            self._raw_judge_ids[raw] = found
        return found

    def text(self, value: str) -> str:
        return self._strings.setdefault(value, value)

    def entrant_order(self) -> Callable[[tuple[int, int]], tuple[tuple[str, str], str]]:
        """Sort key of an (identity id, judge id) pair: model name, identity key, then judge key
        (judge-free first) — the order of a table's rows and entrants."""
        identity_order = {i: (ident.name, ident.key) for i, ident in enumerate(self.identities)}
        judge_order = {i: judge.key() if judge else "" for i, judge in enumerate(self.judges)}
        return lambda pair: (identity_order[pair[0]], judge_order[pair[1]])

    def duplicate_row(self, path: Path, line: int, key: tuple[int, int, str], first: int) -> LoadError:
        """The error for a second row of one (model, judge, item) in a scores.jsonl."""
        return LoadError(
            f"{path}:{line}: duplicate row for model {self.identities[key[0]].name!r}, item {key[2]!r} "
            f"and the same judge (first at line {first})"
        )


# A checked row, compacted: (item_id, suite, task, domain, gold_type, family, status, value, passed,
# latency_s, completion_tokens, metrics, flags, label, answered, source_item_id, cost, line).


def iter_checked_rows(
    run_dir: Path, interner: IdentityInterner
) -> Iterator[tuple[int, tuple[int, int, str], dict[str, Any]]]:
    """(line number, (identity id, judge id, item id), row) for every checked row of one run's scores.jsonl,
    one line in memory at a time; raises :class:`LoadError` naming ``path:line`` at the first bad row."""
    path = run_dir / SCORES_FILENAME
    if not path.is_file():
        raise LoadError(
            f"{path}: not found; pool.run writes it after scoring "
            f"(re-score with `python -m pool.run --rescore {run_dir}`)"
        )
    with path.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LoadError(f"{path}:{line_no}: invalid JSON: {exc.msg} (column {exc.colno})") from None
            problem = check_row(row)
            if problem:
                raise LoadError(f"{path}:{line_no}: {problem}")
            try:
                key = (interner.identity(row["model_identity"]), interner.judge(row.get("judge")), row["item_id"])
            except _IdentityError as exc:
                raise LoadError(f"{path}:{line_no}: {exc}") from None
            yield line_no, key, row
