"""The pool scheduler against the FAKE OpenAI server: limits, faults, exactly-once, model failure."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pool.execute.cache_key import cache_key
from pool.execute.executor import Job, Lane
from pool.execute.response_cache import ResponseCache
from pool.execute.scheduler import Scheduler
from pool.store.outcome import Unit
from pool.store.run_store import RunStore
from runners.base import GenerationParams, GenerationRequest, GenerationResponse
from runners.protocols.openai_compat import OpenAICompatRunner
from runners.retry import RetryPolicy
from tests.fakes import cut_body, drop, rate_limited, server_error, stall, truncated_json
from tests.fakes.openai_fake import FakeOpenAIServer

FAST = RetryPolicy(max_retries=3, backoff_base_s=0.001, backoff_max_s=0.01, retry_after_cap_s=0.05)


def _jobs(model: str, n: int, identity: str) -> list[Job]:
    return [
        Job(
            Unit(model, f"demo/t/{i}"),
            GenerationRequest(
                model=model, messages=({"role": "user", "content": f"q{i}"},), params=GenerationParams(max_tokens=8)
            ),
            "openai",
            identity,
        )
        for i in range(n)
    ]


def _run(
    tmp_path: Path,
    fake: FakeOpenAIServer,
    jobs_by_lane,
    *,
    concurrency: int = 4,
    cache_dir=None,
    failures: int = 5,
    timeout_s: float = 5.0,
):
    async def go():
        async with fake:
            runner = OpenAICompatRunner(fake.base_url, timeout_s=timeout_s, policy=FAST)
            lane = Lane("fake", runner, concurrency)
            with RunStore(tmp_path / "run") as store:
                store.begin_run("r1", pool_fingerprint="p", data_fingerprint="d", options={})
                store.save_plan("r1", [j.unit for jobs in jobs_by_lane.values() for j in jobs])
                streams = {lane: iter(jobs) for lane, jobs in jobs_by_lane.items()}
                cache = ResponseCache(cache_dir) if cache_dir else None
                scheduler = Scheduler(
                    run_id="r1", store=store, lanes={"fake": lane}, cache=cache, max_consecutive_failures=failures
                )
                try:
                    counters = await scheduler.run(streams)
                finally:
                    await runner.aclose()
                    if cache:
                        cache.close()
                return counters, store.results("r1"), store.failed_models("r1"), store.pending_units("r1")

    return asyncio.run(go())


def test_in_flight_reaches_but_never_exceeds_the_backend_limit(tmp_path):
    fake = FakeOpenAIServer(latency_s=0.05)
    jobs = _jobs("m1", 20, "fake://a") + _jobs("m2", 20, "fake://a")
    counters, results, failed, pending = _run(tmp_path, fake, {"fake": jobs}, concurrency=4)
    assert fake.max_in_flight == 4
    assert len(results) == 40 and not pending and not failed
    assert {r.status for r in results} == {"ok"}
    assert counters.calls == 40


def test_faults_are_retried_and_every_unit_recorded_once(tmp_path):
    script = [
        rate_limited("0.01"),
        server_error(500),
        stall(2.0),
        drop(),
        truncated_json(),
        cut_body(),
        server_error(503),
    ]
    fake = FakeOpenAIServer(script=script)
    jobs = _jobs("m1", 12, "fake://a")
    counters, results, failed, pending = _run(tmp_path, fake, {"fake": jobs}, concurrency=1, timeout_s=0.5)
    assert len(results) == 12 and len({r.item_id for r in results}) == 12 and not pending
    by_id = {r.item_id: r for r in results}
    # unit 0 meets 429, 500, a stall past the timeout and a dropped connection: 4 attempts, no answer
    first = by_id["demo/t/0"]
    assert (first.status, first.error_class, first.attempts, first.retries) == ("infra_error", "connection", 4, 3)
    assert [a["error_class"] for a in first.extra["attempts"]] == [
        "rate_limited",
        "server_error",
        "timeout",
        "connection",
    ]
    # unit 1 meets truncated JSON, a cut body and a 503, then is answered on its 4th attempt
    second = by_id["demo/t/1"]
    assert (second.status, second.attempts, second.retries) == ("ok", 4, 3)
    assert all(r.status == "ok" and r.attempts == 1 for r in results if r.item_id not in ("demo/t/0", "demo/t/1"))
    assert fake.request_count == 18 and sum(r.retries for r in results) == 6


def test_dead_model_is_marked_failed_and_others_finish(tmp_path):
    fake = FakeOpenAIServer(behave=lambda i, payload: server_error(500) if payload.get("model") == "dead" else None)
    jobs = {"fake": _jobs("dead", 10, "fake://a") + _jobs("alive", 5, "fake://a")}
    counters, results, failed, pending = _run(tmp_path, fake, jobs, concurrency=1, failures=3)
    assert not pending and len(results) == 15
    assert "dead" in failed and "3 consecutive infra errors" in failed["dead"]
    dead = [r for r in results if r.model == "dead"]
    assert all(r.status == "infra_error" for r in dead)
    assert sum(r.error_class == "model_failed" and r.attempts == 0 for r in dead) == 7
    assert all(r.status == "ok" for r in results if r.model == "alive")


def test_cache_reuses_answers_across_runs_by_identity(tmp_path):
    cache_dir = tmp_path / "cache"
    jobs = _jobs("m1", 5, "fake://a")
    _run(tmp_path / "first", FakeOpenAIServer(), {"fake": jobs}, cache_dir=cache_dir)
    fake = FakeOpenAIServer()
    counters, results, *_ = _run(tmp_path / "second", fake, {"fake": jobs}, cache_dir=cache_dir)
    assert fake.request_count == 0 and counters.cache_hits == 5
    assert all(r.cached and r.attempts == 0 and r.status == "ok" for r in results)
    other = FakeOpenAIServer()
    counters, *_ = _run(tmp_path / "third", other, {"fake": _jobs("m1", 5, "fake://b")}, cache_dir=cache_dir)
    assert other.request_count == 5 and counters.cache_hits == 0


def test_cache_key_names_model_and_endpoint():
    request = _jobs("m1", 1, "x")[0].request
    other_model = _jobs("m2", 1, "x")[0].request
    assert cache_key("openai", "fake://a", request) != cache_key("openai", "fake://a", other_model)
    assert cache_key("openai", "fake://a", request) != cache_key("openai", "fake://b", request)


def test_idle_slots_cost_nothing(tmp_path):
    """3 jobs on a lane allowed 256 requests at once: at most 3 workers ever exist."""
    seen: list[int] = []

    class Counting(FakeOpenAIServer):
        async def handle(self, request):
            seen.append(sum(t.get_name().startswith("work:") for t in asyncio.all_tasks()))
            return await super().handle(request)

    fake = Counting(latency_s=0.05)
    counters, results, failed, pending = _run(tmp_path, fake, {"fake": _jobs("m1", 3, "fake://a")}, concurrency=256)
    assert len(results) == 3 and not pending
    assert max(seen) <= 3 and fake.max_in_flight == 3


class _WaveExecutor:
    """Hands every job of a lane back at once, as answers that arrive in one turn of the loop, then
    waits for their commits, as an executor does before those slots send again (None: committed already)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.rows_before_commit: int | None = None
        self.committed_at_once: list[bool] = []
        self.outcomes: list[object] = []

    async def run(self, jobs_by_lane, on_result, settle_locally) -> None:
        async def done() -> None:
            return None

        for jobs in jobs_by_lane.values():
            commits = [
                on_result(job, GenerationResponse("answer", "stop", 3, 2, 0.01))
                for job in jobs
                if not settle_locally(job)
            ]
            self.rows_before_commit = len(self.store.results("r1"))
            self.committed_at_once = [c is None for c in commits]
            self.outcomes = await asyncio.gather(*(done() if c is None else c for c in commits), return_exceptions=True)


def _wave(tmp_path: Path, jobs: list[Job]) -> tuple[_WaveExecutor, list[str], list]:
    with RunStore(tmp_path / "run") as store:
        store.begin_run("r1", pool_fingerprint="p", data_fingerprint="d", options={})
        store.save_plan("r1", [j.unit for j in jobs])
        statements: list[str] = []
        store._conn.set_trace_callback(statements.append)
        executor = _WaveExecutor(store)
        asyncio.run(Scheduler(run_id="r1", store=store, executor=executor).run({"fake": iter(jobs)}))
        store._conn.set_trace_callback(None)
        return executor, [s for s in statements if s in ("COMMIT", "ROLLBACK")], store.results("r1")


def test_answers_that_arrive_together_share_one_commit_before_their_slots_go_on(tmp_path):
    """The first answer of a turn of the loop is committed at once (its slot goes straight on); the
    others of that turn wait together for one commit."""
    executor, ends, results = _wave(tmp_path, _jobs("m1", 6, "fake://a"))
    assert executor.committed_at_once == [True] + [False] * 5
    assert executor.rows_before_commit == 1  # only the first is written while the answers are handed over...
    assert executor.outcomes == [None] * 6  # ...and every slot is released only once its row is in
    assert ends == ["COMMIT", "COMMIT"] and len(results) == 6


def test_the_first_answer_of_each_turn_is_committed_at_once(tmp_path):
    """Answers that come one turn of the loop apart (a slow server's) are each committed at once."""
    jobs = _jobs("m1", 3, "fake://a")

    class OneByOne:
        def __init__(self) -> None:
            self.committed_at_once: list[bool] = []

        async def run(self, jobs_by_lane, on_result, settle_locally) -> None:
            for job in jobs_by_lane["fake"]:
                if not settle_locally(job):
                    commit = on_result(job, GenerationResponse("answer", "stop", 3, 2, 0.01))
                    self.committed_at_once.append(commit is None)
                    if commit is not None:
                        await commit
                    await asyncio.sleep(0.01)  # the next answer arrives in a later turn

    executor = OneByOne()
    with RunStore(tmp_path / "run") as store:
        store.begin_run("r1", pool_fingerprint="p", data_fingerprint="d", options={})
        store.save_plan("r1", [j.unit for j in jobs])
        asyncio.run(Scheduler(run_id="r1", store=store, executor=executor).run({"fake": iter(jobs)}))
        assert executor.committed_at_once == [True, True, True] and len(store.results("r1")) == 3


def test_a_refused_row_in_a_group_fails_its_own_slot_only(tmp_path):
    jobs = _jobs("m1", 5, "fake://a")
    jobs[2] = Job(jobs[2].unit, jobs[2].request, "openai", "fake://a", called_model="intruder")  # planned for m1
    executor, ends, results = _wave(tmp_path, jobs)
    assert [type(o).__name__ for o in executor.outcomes] == ["NoneType"] * 2 + ["WrongAnswererError"] + ["NoneType"] * 2
    # the first answer alone, then the group of the other four, refused, then row by row
    assert ends == ["COMMIT", "ROLLBACK", "COMMIT", "ROLLBACK", "COMMIT", "COMMIT"]
    assert sorted(r.item_id for r in results) == ["demo/t/0", "demo/t/1", "demo/t/3", "demo/t/4"]


def test_a_refused_first_answer_fails_its_own_slot_only(tmp_path):
    jobs = _jobs("m1", 4, "fake://a")
    jobs[0] = Job(jobs[0].unit, jobs[0].request, "openai", "fake://a", called_model="intruder")  # planned for m1
    executor, ends, results = _wave(tmp_path, jobs)
    assert [type(o).__name__ for o in executor.outcomes] == ["WrongAnswererError"] + ["NoneType"] * 3
    assert ends == ["ROLLBACK", "COMMIT"]  # the first answer alone, refused; then the other three together
    assert sorted(r.item_id for r in results) == ["demo/t/1", "demo/t/2", "demo/t/3"]


def test_a_scheduler_run_again_in_a_new_event_loop_still_commits_its_groups(tmp_path):
    """Runs one after another (the scoring stage's judge calls, a test's second asyncio.run) each
    start a fresh turn: the second run's grouped answers are committed, nothing hangs."""
    jobs = _jobs("m1", 5, "fake://a")
    with RunStore(tmp_path / "run") as store:
        store.begin_run("r1", pool_fingerprint="p", data_fingerprint="d", options={})
        store.save_plan("r1", [j.unit for j in jobs])
        scheduler = Scheduler(run_id="r1", store=store, executor=_WaveExecutor(store))
        asyncio.run(scheduler.run({"fake": iter(jobs[:1])}))
        asyncio.run(asyncio.wait_for(scheduler.run({"fake": iter(jobs[1:])}), timeout=30))
        assert len(store.results("r1")) == 5
