"""What scoring produces: one :class:`Score` per (model, item), and the metric family it belongs to.

Families are reported side by side and never blended into one number:

- ``capability``   — reference-answer items, scored by the LLM judge (total /40, pass);
- ``specialty``    — criteria items, scored by the LLM judge (per domain, safety floor);
- ``orchestration``— routing and tool-decision items (accuracy, judge-free or judge);
- ``robustness``   — hallucination probes (abstain / correct the false premise);
- ``exam``         — single/multi-choice and cloze items (accuracy, option P/R/F1, char-F1);
- ``tcm``          — TCM items: open labels (DTR-F1), extraction, doses, syndrome classification
                     (macro-F1 at aggregate), CHIP cases (P1–P4, total);
- ``live``         — live items (track ``live``): reference items whose reference is a reference agent's
                     answer tonight, judged like capability items; their score is agreement with that
                     agent, not truth, so they are a family of their own (:func:`item_family`).

A row of ``RUN_DIR/scores.jsonl`` is :meth:`Score.to_record` plus the answer's identity:
``{"model", "item_id", "suite", "track", "task", "domain", "broad_area", "gold_type", "family",
"status", "value", "passed", "metrics", "judge", "details", "latency_s", "completion_tokens"}`` where

- ``broad_area``: the item's broad area (内科, 精神科, ...; ``eval.items.broad_areas``), the specialty
  level above ``system``; readers derive it for rows written without it;
- ``status``: ``scored`` (value is meaningful), ``infra_error`` (no answer, or the judge gave no
  parseable verdict — excluded from every mean, counted per cell), ``unscorable`` (the item cannot
  be scored, e.g. an unverified probe);
- ``value``: the primary score in [0, 1] (judge total / 40, accuracy 0/1, F1, CHIP total ...);
- ``passed``: the pass/fail used for correctness matrices and hard subsets (judge: total ≥ 34 and
  safety ≥ 8; deterministic: value ≥ ``PASS_THRESHOLD`` unless the scorer says otherwise);
- ``metrics``: every sub-metric by name (coverage, accuracy, safety, grounding, total, p1..p4, f1,
  precision, recall, ...);
- ``judge``: null for judge-free scores, else ``{"model", "backend", "prompt_version", "key",
  "identity"}`` (see :class:`JudgeIdentity`): the judge's pool name, backend name and prompt
  version, the short stable key rows are grouped by, and the full identity the key hashes;
- ``details``: what a reader needs to audit the score (parsed prediction, rationale, flags).

Objectively checked items (``Item.check``: SQL executed, API call parsed) keep both views. Their
``value`` / ``passed`` are the check's (1/0, ``metrics[CHECK_METRICS[check]]``, plus
``param_score`` for API calls) and ``details["check"]`` holds its outcome and evidence. When a judge
was asked too, the row's ``judge`` is that judge (its verdict is part of the row), its rubric
sub-metrics stay in ``metrics`` and its own total/40 and pass sit beside as ``metrics["judge_value"]``
and ``metrics["judge_passed"]`` (1/0); a judge that gave no verdict leaves the check's score and
records ``details["judge_error"]``. Without a judge the row is the check alone (``judge`` null). A
check that cannot run (its reference does not execute or parse) gives no objective score: the row
is the judge's, ``details["primary"] = "judge"`` and a note says why; without a judge it is
``unscorable``.

A row of a derived item (decision recognition: an open-label item turned single choice) also has
``source_item_id``, the item it was built from, so its accuracy can be shown beside the source's. A row
of a live item also has ``gold_source`` (``live:<agent>``): whose answer its reference is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

# The family of every gold type is declared with the type (eval.gold_types); imported from here too.
from eval.gold_types import FAMILIES, FAMILY_OF_GOLD_TYPE, Family  # noqa: F401
from eval.items.item import LIVE_TRACK

ScoreStatus = Literal["scored", "infra_error", "unscorable"]

# A continuous score counts as correct for correctness matrices and hard subsets at or above this.
PASS_THRESHOLD = 0.5


def family_of(gold_type: str) -> Family:
    try:
        return FAMILY_OF_GOLD_TYPE[gold_type]
    except KeyError:
        raise ValueError(f"unknown gold type {gold_type!r}; known: {', '.join(FAMILY_OF_GOLD_TYPE)}") from None


# Tracks whose items are a family of their own whatever their gold type (see the module docstring).
TRACK_FAMILIES: Mapping[str, Family] = MappingProxyType({LIVE_TRACK: "live"})


def item_family(gold_type: str, track: str) -> Family:
    """The family an item's scores are reported in: its track's when the track is a family of its own
    (:data:`TRACK_FAMILIES`), else its gold type's."""
    return TRACK_FAMILIES.get(track) or family_of(gold_type)


# The primary metric of each objective check (``eval.items.CHECKS``), and the metrics that keep the
# judge's verdict beside it (see the module docstring).
CHECK_METRICS: Mapping[str, str] = MappingProxyType({"sql": "execution_match", "api_call": "call_match"})
JUDGE_VALUE_METRIC, JUDGE_PASSED_METRIC = "judge_value", "judge_passed"

# The fields of a judge identity held outside ``JudgeIdentity.setup``.
JUDGE_NAMED_FIELDS = ("name", "backend", "prompt_version")


@dataclass(frozen=True)
class JudgeIdentity:
    """Who judged, and how: scores differing in any field are never merged.

    ``model`` and ``backend`` are the judge's pool name and backend name, ``prompt_version`` the
    sha256 prefix of the prompt template and rubric, and ``setup`` every other field that shapes a
    verdict, sorted by name: backend type, endpoint identity (URL, or
    ``llamacpp://<weights sha256>/<chat_format>``), model id and each generation setting
    (temperature, max_tokens, stop, top_p, seed, mode, think, gguf, chat_format, ...). Rows written
    before ``setup`` existed carry only the first three fields; that is then their whole identity.

    :meth:`key` is short and stable across runs and machines: ``name@backend#<hash>``, the hash
    being the first 12 hex of sha256 over the canonical JSON of :meth:`as_dict` (for an identity
    without ``setup``, the prompt version itself, as such rows always carried).
    """

    model: str
    backend: str
    prompt_version: str  # sha256 prefix of the prompt template and rubric
    setup: tuple[tuple[str, Any], ...] = ()  # (field, value) pairs, sorted; values hashable (lists as tuples)

    def __post_init__(self) -> None:
        clash = [name for name, _ in self.setup if name in JUDGE_NAMED_FIELDS]
        if clash:
            raise ValueError(f"JudgeIdentity.setup: {', '.join(clash)} are fields of their own, not setup")

    @classmethod
    def of(cls, name: str, backend: str, prompt_version: str, setup: Mapping[str, Any]) -> JudgeIdentity:
        """An identity from plain JSON values (``setup`` lists become tuples so the identity hashes)."""
        return cls(name, backend, prompt_version, tuple(sorted((k, frozen_json(v)) for k, v in setup.items())))

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> JudgeIdentity:
        """The identity a ``scores.jsonl`` ``judge`` object carries (``identity`` may be absent)."""
        full = record.get("identity") or {}
        setup = {k: v for k, v in full.items() if k not in JUDGE_NAMED_FIELDS}
        return cls.of(record["model"], record["backend"], record["prompt_version"], setup)

    def as_dict(self) -> dict[str, Any]:
        """Every field as plain JSON values: name, backend, prompt_version and the setup fields."""
        return {
            "name": self.model,
            "backend": self.backend,
            "prompt_version": self.prompt_version,
            **{k: _thawed(v) for k, v in self.setup},
        }

    def key(self) -> str:
        if not self.setup:
            return f"{self.model}@{self.backend}#{self.prompt_version}"
        blob = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return f"{self.model}@{self.backend}#{hashlib.sha256(blob.encode('utf-8')).hexdigest()[:12]}"

    def to_record(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "backend": self.backend,
            "prompt_version": self.prompt_version,
            "key": self.key(),
            "identity": self.as_dict(),
        }


def frozen_json(value: Any) -> Any:
    """A JSON value made hashable: lists (nested too) become tuples; scalars stay as they are."""
    return tuple(frozen_json(v) for v in value) if isinstance(value, (list, tuple)) else value


def _thawed(value: Any) -> Any:
    """The inverse of :func:`frozen_json`: tuples become lists again."""
    return [_thawed(v) for v in value] if isinstance(value, tuple) else value


@dataclass(frozen=True)
class Score:
    status: ScoreStatus
    value: float | None = None
    passed: bool | None = None
    metrics: Mapping[str, float] = field(default_factory=dict)
    judge: JudgeIdentity | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status == "scored":
            if self.value is None or not 0.0 <= self.value <= 1.0:
                raise ValueError(f"a scored Score needs a value in [0, 1], got {self.value!r}")
        elif self.value is not None:
            raise ValueError(f"a {self.status} Score carries no value")

    def to_record(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "value": self.value,
            "passed": self.passed,
            "metrics": dict(self.metrics),
            "judge": None if self.judge is None else self.judge.to_record(),
            "details": dict(self.details),
        }
