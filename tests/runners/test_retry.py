"""The retry policy on its own: classification, Retry-After, backoff bounds, attempt records."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runners.base import GenerationResponse
from runners.retry import (
    JsonEndpoint,
    Outcome,
    RetryPolicy,
    call_with_retries,
    classify_exception,
    classify_status,
    parse_retry_after,
    redact,
)

FAST = RetryPolicy(max_retries=3, backoff_base_s=0.01, backoff_max_s=0.05)
ANSWER = GenerationResponse(text="42", finish_reason="stop", prompt_tokens=1, completion_tokens=1, latency_s=0.0)


class RecordingSleep:
    """Stands in for asyncio.sleep: records each requested wait and returns at once."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def scripted(outcomes: list[Outcome]):
    """An attempt function that plays the outcomes in order (the last one repeats)."""
    calls = {"n": 0}

    async def attempt() -> Outcome:
        i = min(calls["n"], len(outcomes) - 1)
        calls["n"] += 1
        return outcomes[i]

    return attempt, calls


def failure(error_class="server_error", status=500, retryable=True, retry_after=None, detail="boom"):
    return Outcome(None, status, error_class, detail, retryable, retry_after)


SUCCESS = Outcome(ANSWER, 200, None)


# --- Retry-After --------------------------------------------------------------------------
def test_retry_after_seconds_and_dates():
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("5", now) == 5.0
    assert parse_retry_after(" 1.5 ", now) == 1.5
    assert parse_retry_after("-3", now) == 0.0
    assert parse_retry_after(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == 30.0
    assert parse_retry_after(format_datetime(now - timedelta(seconds=30), usegmt=True), now) == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("") is None
    assert parse_retry_after("soon, maybe") is None


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False))
def test_retry_after_delta_seconds_roundtrip(seconds):
    assert parse_retry_after(repr(seconds)) == pytest.approx(seconds)


# --- classification -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "status, expected",
    [
        (429, ("rate_limited", True)),
        (500, ("server_error", True)),
        (502, ("server_error", True)),
        (503, ("server_error", True)),
        (408, ("timeout", True)),
        (400, ("client_error", False)),
        (404, ("client_error", False)),
        (422, ("client_error", False)),
        (401, ("auth", False)),
        (403, ("auth", False)),
    ],
)
def test_classify_status(status, expected):
    assert classify_status(status) == expected


@pytest.mark.parametrize(
    "exc, error_class, retryable",
    [
        (TimeoutError(), "timeout", True),
        (aiohttp.ServerTimeoutError("read timeout"), "timeout", True),
        (aiohttp.ServerDisconnectedError(), "connection", True),
        (aiohttp.ClientPayloadError("cut short"), "connection", True),
        (aiohttp.ClientConnectionError("refused"), "connection", True),
        (aiohttp.InvalidURL("nope"), "client_error", False),
    ],
)
def test_classify_exception(exc, error_class, retryable):
    got_class, got_retryable, detail = classify_exception(exc, timeout_s=5)
    assert (got_class, got_retryable) == (error_class, retryable)
    assert type(exc).__name__ in detail


def test_redact_removes_secret_and_shortens():
    assert redact("key sk-canary here", "sk-canary") == "key *** here"
    assert len(redact("x" * 1000, None)) <= 200


# --- the loop -----------------------------------------------------------------------------
def test_success_after_retryable_failures_records_every_attempt():
    attempt, calls = scripted([failure(), failure("connection", None), SUCCESS])
    sleep = RecordingSleep()
    resp = asyncio.run(call_with_retries(attempt, FAST, sleep))
    assert resp.ok and resp.text == "42"
    assert [a.number for a in resp.attempts] == [1, 2, 3]
    assert [a.error_class for a in resp.attempts] == ["server_error", "connection", None]
    assert [a.status for a in resp.attempts] == [500, None, 200]
    assert len(sleep.waits) == 2 and calls["n"] == 3


def test_stops_after_max_retries():
    attempt, calls = scripted([failure("rate_limited", 429)])
    policy = RetryPolicy(max_retries=2, backoff_base_s=0.01)
    resp = asyncio.run(call_with_retries(attempt, policy, RecordingSleep()))
    assert resp.error_class == "rate_limited" and resp.text == ""
    assert calls["n"] == 3 and len(resp.attempts) == 3
    assert "after 3 attempts" in resp.error_detail


def test_zero_retries_means_one_attempt():
    attempt, calls = scripted([failure()])
    resp = asyncio.run(call_with_retries(attempt, RetryPolicy(max_retries=0), RecordingSleep()))
    assert calls["n"] == 1 and resp.error_class == "server_error"


def test_non_retryable_failure_is_not_retried_and_never_sleeps():
    attempt, calls = scripted([failure("client_error", 400, retryable=False), SUCCESS])
    sleep = RecordingSleep()
    resp = asyncio.run(call_with_retries(attempt, FAST, sleep))
    assert resp.error_class == "client_error" and calls["n"] == 1 and sleep.waits == []


def test_retry_after_is_a_floor_on_the_wait():
    attempt, _ = scripted([failure("rate_limited", 429, retry_after=7.0), SUCCESS])
    sleep = RecordingSleep()
    resp = asyncio.run(call_with_retries(attempt, FAST, sleep))
    assert resp.ok and len(resp.attempts) == 2
    assert sleep.waits == [pytest.approx(7.0)]  # backoff alone would be <= 0.01 s


def test_retry_after_is_capped():
    attempt, _ = scripted([failure("rate_limited", 429, retry_after=86_400.0), SUCCESS])
    sleep = RecordingSleep()
    policy = RetryPolicy(max_retries=1, backoff_base_s=0.01, retry_after_cap_s=60.0)
    asyncio.run(call_with_retries(attempt, policy, sleep))
    assert sleep.waits == [60.0]


def test_secret_is_redacted_from_attempt_details():
    attempt, _ = scripted([failure(detail="echoed Bearer sk-canary-123", retryable=False)])
    resp = asyncio.run(call_with_retries(attempt, FAST, RecordingSleep(), secret="sk-canary-123"))
    assert "sk-canary-123" not in resp.attempts[0].detail
    assert "sk-canary-123" not in resp.error_detail


@settings(max_examples=60, deadline=None)
@given(
    max_retries=st.integers(min_value=0, max_value=5),
    script=st.lists(st.sampled_from(["retryable", "fatal", "ok"]), min_size=1, max_size=8),
    base=st.floats(min_value=0.001, max_value=2.0),
    cap=st.floats(min_value=0.001, max_value=5.0),
)
def test_attempt_count_and_backoff_bounds(max_retries, script, base, cap):
    """Attempts stop at the first success or fatal error, or after max_retries + 1; each wait n
    lies in [0, min(cap, base * 2**(n-1))] when there is no Retry-After."""
    outcomes = {"retryable": failure(), "fatal": failure("client_error", 400, retryable=False), "ok": SUCCESS}
    attempt, calls = scripted([outcomes[s] for s in script])
    sleep = RecordingSleep()
    policy = RetryPolicy(max_retries=max_retries, backoff_base_s=base, backoff_max_s=cap)
    resp = asyncio.run(call_with_retries(attempt, policy, sleep))

    played = script + [script[-1]] * (max_retries + 1)
    expected = max_retries + 1
    for i, s in enumerate(played[: max_retries + 1]):
        if s != "retryable":
            expected = i + 1
            break
    assert calls["n"] == len(resp.attempts) == expected
    assert resp.ok == (played[expected - 1] == "ok")
    assert len(sleep.waits) == expected - 1
    for n, wait in enumerate(sleep.waits, start=1):
        assert 0 <= wait <= min(cap, base * 2 ** (n - 1)) + 1e-9


def test_unset_key_env_is_an_auth_error_that_never_stores_the_variable(monkeypatch):
    """The detail is stored with the result, and a "variable name" may be a pasted token: it says
    which setting to fix, not the name (the run's preflight names the pool file's line)."""
    monkeypatch.delenv("MEDPOOL_TEST_UNSET_KEY", raising=False)
    endpoint = JsonEndpoint("http://127.0.0.1:9", api_key_env="MEDPOOL_TEST_UNSET_KEY", timeout_s=1, policy=FAST)
    resp = asyncio.run(endpoint.post("/x", {}, lambda obj: ANSWER))
    assert resp.error_class == "auth" and resp.attempts == ()
    assert "api_key_env" in resp.error_detail and "MEDPOOL_TEST_UNSET_KEY" not in resp.error_detail
