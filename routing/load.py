"""Read run directories into a :class:`~routing.table.ScoreTable` — the only file reading in aggregation.

Per run directory: ``summary.json`` (run_id, created_at, pool and data fingerprints, per-model
answer counts; see ``pool.store.export``) and ``scores.jsonl`` (one row per (model, item); see
``eval.scores``). A missing or broken file raises :class:`LoadError` naming ``path:line: field``.

Merging several runs: rows are keyed by (model identity, judge identity, item). Two rows with the
same key in one file are an error; across runs the row of the later run (by ``created_at``) wins,
except that an ``infra_error`` never replaces a real result. Rows differing in model or judge
identity are different keys, so they are never merged.

Identities are compared field by field, whole: ``model_identity`` is every field the row carries
(name, backend, backend_type, endpoint, model id, temperature, max_tokens, stop, top_p, seed, mode,
think, gguf, chat_format, ...), and the judge is :class:`~eval.scores.JudgeIdentity` (pool name,
backend, prompt version and the ``identity`` object's other fields; its stored ``key`` is derived,
never trusted). A row written before a field existed simply lacks it, and its identity is what it
carries — so it is kept apart from a newer row that names the field. :attr:`Loaded.kept_apart`
lists every model name and every judge (per family) that stands for more than one identity, with
the fields that tell them apart and the runs each came from.

``source_item_id`` (rows of derived items, e.g. decision recognition) becomes
:attr:`ScoreTable.sources`, so a derived task can be shown beside its source task.

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
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from eval.gold_types import primary_metric_of
from eval.scores import FAMILIES, JUDGE_NAMED_FIELDS, JudgeIdentity, frozen_json
from routing.table import (
    NO_DOMAIN,
    SCORED,
    STATUSES,
    Entrant,
    ModelIdentity,
    ScoreTable,
    intern,
    make_entrants,
)

SCORES_FILENAME = "scores.jsonl"
SUMMARY_FILENAME = "summary.json"
FLAG_COLUMNS = ("safety_floor", "claims_unsupported", "claims_total", "grounding_unsupported")
REQUIRED_STR = ("model", "item_id", "task", "gold_type")


class LoadError(ValueError):
    """A run file that cannot be read; the message starts with ``path[:line]``."""


@dataclass(frozen=True)
class RunInfo:
    dir: str
    run_id: str
    created_at: str
    pool_fingerprint: str | None
    data_fingerprint: str | None
    models: Mapping[str, Any]  # summary.json "models": per-model answer tallies (status counts, ...)
    wall_time_s: float | None


@dataclass(frozen=True)
class Loaded:
    table: ScoreTable
    runs: tuple[RunInfo, ...]
    skipped_runs: tuple[str, ...]  # directories left out by --since
    superseded: int  # rows replaced by a later run's row for the same key
    kept_apart: tuple[dict[str, Any], ...] = ()  # see kept_apart(): same name, different identities


def parse_time(text: str, where: str) -> datetime:
    """An ISO-8601 timestamp as an aware UTC datetime (a naive one is taken as UTC)."""
    try:
        moment = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise LoadError(f"{where}: not an ISO-8601 time: {text!r} (e.g. 2026-11-29T12:00:00Z)") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def read_summary(run_dir: Path) -> RunInfo:
    path = run_dir / SUMMARY_FILENAME
    if not path.is_file():
        raise LoadError(f"{path}: not found; pass a run directory written by pool.run (it holds {SUMMARY_FILENAME} and {SCORES_FILENAME})")
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise LoadError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from None
    if not isinstance(summary, dict):
        raise LoadError(f"{path}:1: expected a JSON object, got {type(summary).__name__}")
    for key in ("run_id", "created_at"):
        if not isinstance(summary.get(key), str):
            raise LoadError(f"{path}: field {key!r} must be a string")
    parse_time(summary["created_at"], f"{path}: field 'created_at'")
    models = summary.get("models") if isinstance(summary.get("models"), dict) else {}
    wall = summary.get("wall_time_s")
    return RunInfo(
        dir=str(run_dir), run_id=summary["run_id"], created_at=summary["created_at"],
        pool_fingerprint=summary.get("pool_fingerprint"), data_fingerprint=summary.get("data_fingerprint"),
        models=models, wall_time_s=float(wall) if isinstance(wall, (int, float)) else None,
    )  # fmt: skip


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_row(row: Any) -> str | None:
    """What is wrong with one scores.jsonl row (``field: problem``), or None.

    The values inside ``model_identity`` and ``judge.identity`` are checked once per distinct
    object, when :class:`_Interner` first meets it (a million rows hold a handful of identities).
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
    identity = row.get("model_identity")
    if not isinstance(identity, dict) or not isinstance(identity.get("name"), str):
        return "model_identity: must be an object with at least 'name' (name, backend, model, temperature, ...)"
    if identity["name"] != row["model"]:
        return f"model_identity.name: {identity['name']!r} differs from model {row['model']!r}"
    judge = row.get("judge")
    if judge is not None and not (isinstance(judge, dict) and all(isinstance(judge.get(k), str) for k in ("model", "backend", "prompt_version"))):
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
    for field, top in zip(JUDGE_NAMED_FIELDS, ("model", "backend", "prompt_version")):
        if field in full and full[field] != judge[top]:
            return f"judge.identity.{field}: {full[field]!r} differs from judge.{top} {judge[top]!r}"
    return _identity_values("judge.identity", full)


def _answered(row: Mapping[str, Any]) -> bool:
    """Whether the row's answer was obtained (see the module docstring for rows without answer_status)."""
    if row.get("answer_status") is not None:
        return bool(row["answer_status"] != "infra_error")
    return not (row["status"] == "infra_error" and row.get("judge") is None)


def _flags(details: Mapping[str, Any]) -> tuple[float, float, float, float]:
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
    return floor, unsupported, total, grounded


def _label(row: Mapping[str, Any]) -> tuple[Any, Any, tuple[Any, ...]] | None:
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


class _Interner:
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
        return LoadError(f"{path}:{line}: duplicate row for model {self.identities[key[0]].name!r}, item {key[2]!r} "
                         f"and the same judge (first at line {first})")  # fmt: skip


# A checked row, compacted: (item_id, suite, task, domain, gold_type, family, status, value, passed,
# latency_s, completion_tokens, metrics, flags, label, answered, source_item_id, cost, line).
Record = tuple[Any, ...]
STATUS_CODE = {name: code for code, name in enumerate(STATUSES)}
INFRA_CODE = STATUS_CODE["infra_error"]


def iter_checked_rows(run_dir: Path, interner: _Interner) -> Iterator[tuple[int, tuple[int, int, str], dict[str, Any]]]:
    """(line number, (identity id, judge id, item id), row) for every checked row of one run's scores.jsonl,
    one line in memory at a time; raises :class:`LoadError` naming ``path:line`` at the first bad row."""
    path = run_dir / SCORES_FILENAME
    if not path.is_file():
        raise LoadError(f"{path}: not found; pool.run writes it after scoring (re-score with `python -m pool.run --rescore {run_dir}`)")
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


def read_scores(run_dir: Path, interner: _Interner) -> list[tuple[tuple[int, int, str], Record]]:
    """((identity id, judge id, item id), record) for every checked row of one run's scores.jsonl."""
    out = []
    text = interner.text
    for line_no, key, row in iter_checked_rows(run_dir, interner):
        details = row.get("details", {})
        out.append((key, (
            row["item_id"], text(str(row.get("suite") or "")), text(row["task"]), text(row.get("domain") or NO_DOMAIN),
            text(row["gold_type"]), text(row["family"]), STATUS_CODE[row["status"]], row["value"], row.get("passed"),
            row.get("latency_s"), row.get("completion_tokens"), row.get("metrics") or None,
            _flags(details) if details else None, _label(row), _answered(row),
            row["source_item_id"] if isinstance(row.get("source_item_id"), str) else None, row.get("cost"),
            line_no,
        )))  # fmt: skip
    return out


@dataclass(frozen=True)
class ScoreDigest:
    """One run's scored values per (entrant, family), read in one pass without building a table:
    memory grows with the scored values (8 bytes each), not with the rows' text."""

    entrants: tuple[Entrant, ...]
    values: Mapping[tuple[int, str], np.ndarray]  # (entrant index, family) -> values of its scored rows
    judges_by_family: Mapping[str, tuple[str, ...]]  # family -> judge keys of its rows (any status), sorted


def digest_scores(run_dir: Path | str) -> ScoreDigest:
    """A :class:`ScoreDigest` of ``RUN_DIR/scores.jsonl``; raises :class:`LoadError` as :func:`load_runs`
    does (bad row, the same (model, judge, item) twice, no row at all)."""
    run_dir = Path(run_dir)
    interner = _Interner()
    values: dict[tuple[int, int, str], array[float]] = {}
    judges: dict[str, set[int]] = {}
    seen: dict[int, int] = {}  # hash of the row key -> line (a set of ints, not of key tuples)
    for line_no, key, row in iter_checked_rows(run_dir, interner):
        first = seen.setdefault(hash(key), line_no)
        if first != line_no:
            raise interner.duplicate_row(run_dir / SCORES_FILENAME, line_no, key, first)
        family = interner.text(row["family"])
        judges.setdefault(family, set()).add(key[1])
        column = values.setdefault((key[0], key[1], family), array("d"))
        if row["status"] == STATUSES[SCORED]:
            column.append(float(row["value"]))
    if not seen:
        raise LoadError(f"no score rows in {run_dir / SCORES_FILENAME}")
    pairs = sorted({(i, j) for i, j, _ in values}, key=interner.entrant_order())
    judge_keys = {i: judge.key() for i, judge in enumerate(interner.judges) if judge is not None}
    entrants = make_entrants([(interner.identities[i], interner.judges[j]) for i, j in pairs])
    index = {pair: e for e, pair in enumerate(pairs)}
    return ScoreDigest(
        entrants=tuple(entrants),
        values={(index[(i, j)], family): np.frombuffer(column, dtype=float) for (i, j, family), column in values.items()},
        judges_by_family={family: tuple(sorted(judge_keys[j] for j in ids if j)) for family, ids in sorted(judges.items())},
    )  # fmt: skip


def merge_rows(per_run: Sequence[tuple[Path, list[tuple[tuple[int, int, str], Record]]]],
               interner: _Interner) -> tuple[dict[tuple[int, int, str], tuple[Record, int]], int]:  # fmt: skip
    """Key -> (record, run index); runs must come oldest first. Returns the map and the superseded count."""
    merged: dict[tuple[int, int, str], tuple[Record, int]] = {}
    superseded = 0
    for run_index, (run_dir, rows) in enumerate(per_run):
        seen: dict[tuple[int, int, str], int] = {}
        for key, record in rows:
            if key in seen:
                raise interner.duplicate_row(run_dir / SCORES_FILENAME, record[-1], key, seen[key])
            seen[key] = record[-1]
            if key in merged:
                superseded += 1
                if record[6] == INFRA_CODE and merged[key][0][6] != INFRA_CODE:
                    continue  # the earlier real result stands
            merged[key] = (record, run_index)
    return merged, superseded


def build_table(merged: Mapping[tuple[int, int, str], tuple[Record, int]], interner: _Interner) -> ScoreTable:
    """Columns from merged records (row order: model identity, judge, item id)."""
    order = interner.entrant_order()
    keys = sorted(merged, key=lambda k: (order((k[0], k[1])), k[2]))
    pairs = list(dict.fromkeys((k[0], k[1]) for k in keys))
    entrants = make_entrants([(interner.identities[i], interner.judges[j]) for i, j in pairs])
    entrant_index = {pair: i for i, pair in enumerate(pairs)}
    records = [merged[k][0] for k in keys]
    n = len(records)
    categorical = {name: [r[i] for r in records] for i, name in enumerate(("item", "suite", "task", "domain", "gold_type", "family"))}
    systems = {d: d.split(":", 1)[0] for d in set(categorical["domain"])}
    categorical["system"] = [systems[d] for d in categorical["domain"]]
    codes, vocab = {}, {}
    for name, values in categorical.items():
        codes[name], vocab[name] = intern(values)
    items = vocab.pop("item")

    def column(index: int) -> np.ndarray:
        return np.array([r[index] for r in records], dtype=float)  # None -> NaN

    metric_rows = [r[11] or {} for r in records]
    metric_names = sorted({name for m in metric_rows if m for name in m})
    no_flags = (math.nan,) * len(FLAG_COLUMNS)
    flags = np.array([r[12] or no_flags for r in records], dtype=float).reshape(n, len(FLAG_COLUMNS))
    return ScoreTable(
        entrants=tuple(entrants), items=items, vocab=vocab,
        entrant=np.fromiter((entrant_index[(k[0], k[1])] for k in keys), dtype=np.int32, count=n),
        **codes, status=np.array([r[6] for r in records], dtype=np.int8),
        value=column(7), passed=column(8), latency_s=column(9), completion_tokens=column(10),
        run=np.fromiter((merged[k][1] for k in keys), dtype=np.int16, count=n),
        metrics={name: np.array([m.get(name) for m in metric_rows], dtype=float) for name in metric_names},
        flags={name: flags[:, j] for j, name in enumerate(FLAG_COLUMNS)},
        labels={i: r[13] for i, r in enumerate(records) if r[13] is not None},
        answered=np.fromiter((r[14] for r in records), dtype=bool, count=n),
        sources={r[0]: r[15] for r in records if r[15] is not None},
        cost=column(16),
    )  # fmt: skip


def load_runs(run_dirs: Sequence[Path | str], since: str | None = None) -> Loaded:
    """Read, check and merge the given runs (those created before ``since`` are skipped)."""
    if not run_dirs:
        raise LoadError("no run directory given")
    infos = []
    for run_dir in map(Path, run_dirs):
        if not run_dir.is_dir():
            raise LoadError(f"{run_dir}: not a directory; pass the run directory pool.run wrote")
        infos.append((run_dir, read_summary(run_dir)))
    skipped: list[str] = []
    if since is not None:
        cutoff = parse_time(since, "--since")
        skipped = [str(d) for d, info in infos if parse_time(info.created_at, str(d)) < cutoff]
        infos = [(d, info) for d, info in infos if parse_time(info.created_at, str(d)) >= cutoff]
        if not infos:
            raise LoadError(f"--since {since}: every run was created earlier ({', '.join(skipped)})")
    infos.sort(key=lambda pair: parse_time(pair[1].created_at, pair[0].name))  # stable: argument order breaks ties
    interner = _Interner()
    per_run = [(d, read_scores(d, interner)) for d, _ in infos]
    merged, superseded = merge_rows(per_run, interner)
    if not merged:
        raise LoadError(f"no score rows in {', '.join(str(d / SCORES_FILENAME) for d, _ in infos)}")
    table = build_table(merged, interner)
    runs = tuple(info for _, info in infos)
    return Loaded(table, runs, tuple(skipped), superseded, tuple(kept_apart(table, runs)))


def _differing(records: Sequence[Mapping[str, Any]]) -> list[str]:
    """Field names whose value is not the same in every record (a missing field counts as null)."""
    names = sorted({k for r in records for k in r})
    return [k for k in names if len({json.dumps(r.get(k), sort_keys=True, default=str) for r in records}) > 1]


def kept_apart(table: ScoreTable, runs: Sequence[RunInfo]) -> list[dict[str, Any]]:
    """Every name that stands for more than one identity, each identity kept as its own entrant.

    ``{"kind": "model", "name", "differs_in": [field], "identities": [{"label", "key", "runs"}]}``
    per pool name with several model identities, and ``{"kind": "judge", "family", "name",
    "differs_in", "identities": [{"key", "runs"}]}`` per family and judge pool name with several
    judge identities (within a family every verdict uses one prompt contract, so a second identity
    there is another judge, server, setting or prompt version — never merged). ``runs``: run ids.
    """
    pairs = np.unique(np.stack([table.entrant, table.run]), axis=1) if len(table) else np.zeros((2, 0), dtype=int)
    runs_of: dict[int, list[str]] = {}
    for entrant, run in pairs.T:
        runs_of.setdefault(int(entrant), []).append(runs[int(run)].run_id)
    out: list[dict[str, Any]] = []
    models: dict[str, dict[ModelIdentity, set[str]]] = {}
    for index, entrant in enumerate(table.entrants):
        models.setdefault(entrant.model.name, {}).setdefault(entrant.model, set()).update(runs_of.get(index, ()))
    labels = {e.model: e.model_label for e in table.entrants}
    for name, group in sorted(models.items()):
        if len(group) > 1:
            idents = sorted(group, key=lambda i: labels[i])
            out.append({"kind": "model", "name": name, "differs_in": _differing([i.as_dict() for i in idents]),
                        "identities": [{"label": labels[i], "key": i.key, "runs": sorted(group[i])} for i in idents]})  # fmt: skip
    families = table.names("family")
    judges: dict[tuple[str, str], dict[JudgeIdentity, set[str]]] = {}
    pairs = np.unique(np.stack([table.family, table.entrant, table.run]), axis=1) if len(table) else np.zeros((3, 0), dtype=int)
    for family, entrant, run in pairs.T:
        judge = table.entrants[int(entrant)].judge
        if judge is not None:
            judges.setdefault((families[int(family)], judge.model), {}).setdefault(judge, set()).add(runs[int(run)].run_id)
    for (family, name), group in sorted(judges.items()):
        if len(group) > 1:
            idents = sorted(group, key=lambda j: j.key())
            out.append({"kind": "judge", "family": family, "name": name,
                        "differs_in": _differing([j.as_dict() for j in idents]),
                        "identities": [{"key": j.key(), "runs": sorted(group[j])} for j in idents]})  # fmt: skip
    return out
