"""Units of work, their recorded results, and how a response becomes a status.

A *unit* is one (model, item_id, stage): the answer a model gives to an item, or a later stage
over it (``"judge"``, judge sub-stages — ``stage`` is a free string). A *result* is what the run
store keeps for a unit, exactly once per run.

Status semantics (what scorers and reports may rely on):

- ``ok`` — the model answered.
- ``error`` — the model answered badly (empty, truncated by ``max_tokens``, or ``oversize``: past
  the backend's byte or character cap). A real result: scorers see it and score it; a truncated
  answer's text is kept.
- ``infra_error`` — we could not get an answer at all (connection, timeout, rate limited, server
  error, auth, unparsable body after retries, or a ``client_error`` — the request itself was
  rejected, so it was never answered). Excluded from scores; counted and shown in summaries.

Refusals are not detected here: whether "I can't give medical advice" is a refusal or a correct
abstention depends on the item, so that judgement belongs to the scorers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from runners.base import GenerationResponse

Status = Literal["ok", "error", "infra_error"]
STATUSES: tuple[Status, ...] = ("ok", "error", "infra_error")
# Why an answer is an "error" (answered, but flawed); reported by name, since "error" alone reads as
# a broken run when the answers were only cut at their token budget.
ANSWER_FLAWS: tuple[str, ...] = ("truncated", "empty", "oversize")
ANSWER_STAGE = "answer"  # the stage of a candidate's answer; judge stages are named "judge:…"


@dataclass(frozen=True)
class Unit:
    """One planned piece of work within a run."""

    model: str
    item_id: str
    stage: str = "answer"  # ANSWER_STAGE

    def __post_init__(self) -> None:
        for name in ("model", "item_id", "stage"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise TypeError(f"Unit.{name} must be a non-empty str, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class Result:
    """One row of the ``results`` table (see :mod:`pool.store.run_store` for the column meanings)."""

    run_id: str
    model: str
    item_id: str
    stage: str
    status: Status
    error_class: str | None  # infra: the runner's ErrorClass; error: "empty" | "truncated"
    error_detail: str
    attempts: int  # HTTP attempts made; 0 for a cache hit
    retries: int  # attempts beyond the first
    latency_s: float | None
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    text: str  # the raw answer, never an error string
    request_json: str  # canonical JSON of messages/prompt + params as sent, no keys
    cache_key: str | None
    cached: bool
    started_at: str  # UTC ISO
    finished_at: str  # UTC ISO
    server_timing_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # later stages: scores, verdicts, ...
    answered_by: str = ""  # the pool model that actually answered (the judge for judge stages)
    endpoint: str = ""  # that model's endpoint identity (URL, or llamacpp://<weights sha256>/...)

    @property
    def unit(self) -> Unit:
        return Unit(self.model, self.item_id, self.stage)


def classify(response: GenerationResponse) -> tuple[Status, str | None]:
    """(status, reason): infra failure, bad answer, or a plain answer.

    Order matters: no answer at all beats everything; an empty text is ``empty`` even when the
    server also said ``length`` (e.g. a reasoning model spent every token thinking).
    """
    if response.error_class == "oversize":  # the model answered, far past any sane length
        return "error", "oversize"
    if response.error_class is not None:
        return "infra_error", response.error_class
    if not response.text.strip():
        return "error", "empty"
    if response.finish_reason == "length":
        return "error", "truncated"
    return "ok", None


def result_from_response(
    run_id: str,
    unit: Unit,
    response: GenerationResponse,
    *,
    request_json: str,
    cache_key: str | None,
    started_at: str,
    finished_at: str,
    cached: bool = False,
    extra: dict[str, Any] | None = None,
    answered_by: str = "",
    endpoint: str = "",
) -> Result:
    """Build the row for a unit from a runner (or cache) response, classifying it."""
    status, reason = classify(response)
    attempts = 0 if cached else len(response.attempts)
    detail = response.error_detail if status == "infra_error" or reason == "oversize" else ""
    if status == "error" and reason == "truncated":
        detail = f"finish_reason=length, completion_tokens={response.completion_tokens}"
    return Result(
        run_id=run_id,
        model=unit.model,
        item_id=unit.item_id,
        stage=unit.stage,
        status=status,
        error_class=reason,
        error_detail=detail,
        attempts=attempts,
        retries=max(0, attempts - 1),
        latency_s=response.latency_s,
        prompt_tokens=response.prompt_tokens,
        completion_tokens=response.completion_tokens,
        finish_reason=response.finish_reason,
        text=response.text,
        request_json=request_json,
        cache_key=cache_key,
        cached=cached,
        started_at=started_at,
        finished_at=finished_at,
        server_timing_s=response.server_timing_s,
        extra=dict(extra or {}),
        answered_by=answered_by or unit.model,
        endpoint=endpoint,
    )
