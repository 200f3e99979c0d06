"""``python -m pool.check``: the zero-budget gate before a paid run.

Static checks against good and broken inputs (suites, registries, round trip, pool file, keys,
model files, judge), the exit codes, and the smoke: against FAKE servers (a candidate that answers,
a dead one, and a judge that counts the requests it gets — it must get none), and against the
real managed llama.cpp server with one small model of the shipped pool.
"""

from __future__ import annotations

import socket
import tempfile
from pathlib import Path

import pytest

from eval.items import Item
from eval.loaders import load_demo_suite
from eval.scorers import SCORERS
from pool.check import CheckSpec, gate
from pool.check.__main__ import main
from pool.check.smoke import one_per_track
from pool.check.suites import registry_outcome
from tests.fake_pool import PoolWriter, write_fake_pool, write_jsonl
from tests.fakes import ThreadedFakes
from tests.fakes.openai_fake import FakeOpenAIServer
from tests.local_models import requires_llama
from tests.shared_data import need_shared

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO.parent / "shared" / "data"
CHOICE = {
    "id": "c1",
    "task": "single_choice",
    "track": "exam",
    "gold_type": "single_choice",
    "question": "妊娠期禁用的降压药是？",
    "options": {"A": "拉贝洛尔", "B": "依那普利"},
    "gold": "B",
}


def check(*args: str) -> int:
    return main(list(args))


def lines_of(out: str, check_name: str) -> list[str]:
    """The head line of ``check_name`` and its indented details."""
    lines = out.splitlines()
    start = next(n for n, line in enumerate(lines) if line.split(":")[0].split(" ", 1)[-1] == check_name)
    end = next((n for n in range(start + 1, len(lines)) if not lines[n].startswith("    ")), len(lines))
    return lines[start:end]


def status_of(out: str, check_name: str) -> str:
    return lines_of(out, check_name)[0].split(" ", 1)[0]


def dead_url() -> str:
    """The URL of a port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture()
def fake_pool(tmp_path: Path) -> Path:
    """A pool whose candidate and judge point at an address nothing serves: fine for the static checks."""
    return write_fake_pool(tmp_path / "pool.yaml", dead_url())


# --- static checks ------------------------------------------------------------------------------


def test_the_demo_suite_and_a_good_pool_pass_every_static_check(fake_pool: Path, capsys) -> None:
    assert check("--pool", str(fake_pool), "--no-smoke") == 0
    out = capsys.readouterr().out
    for name in ("suites", "registry", "round trip", "pool", "keys and model files", "judge"):
        assert status_of(out, name) == "PASS", out
    assert status_of(out, "smoke") == "SKIP"
    demo = load_demo_suite()
    assert f"{len(demo.items)} items" in lines_of(out, "suites")[0]
    assert "judge contracts: criteria→criteria, probe→probe, reference→reference" in out


def test_a_broken_suite_fails_naming_the_file_and_line(fake_pool: Path, tmp_path: Path, capsys) -> None:
    data = write_jsonl(tmp_path / "suite" / "items.jsonl", [CHOICE, {**CHOICE, "id": "c2", "gold": "Z"}])
    assert check("--pool", str(fake_pool), "--data", str(data)) == 1
    out = capsys.readouterr().out
    head = lines_of(out, "suites")[0]
    assert head.startswith("FAIL suites:") and f"{data}:2" in head and "gold" in head and "to do:" in head
    assert status_of(out, "registry") == "SKIP" and status_of(out, "smoke") == "SKIP"
    assert out.rstrip().endswith("fix them before a paid run")


def test_skipped_items_are_listed_with_their_reason(fake_pool: Path, tmp_path: Path, capsys) -> None:
    draft = {**CHOICE, "id": "c2", "scorable": False, "skip_reason": "still a draft"}
    data = write_jsonl(tmp_path / "suite" / "items.jsonl", [CHOICE, draft])
    assert check("--pool", str(fake_pool), "--data", str(data), "--no-smoke") == 0
    suites = lines_of(capsys.readouterr().out, "suites")
    assert "2 items, 1 scorable (exam 1), 1 skipped" in suites[0]
    assert any("skipped 1× still a draft" in line and f"{data}:2" in line for line in suites[1:])


def test_a_gold_type_without_a_scorer_fails_the_registry(fake_pool: Path, monkeypatch, capsys) -> None:
    monkeypatch.delitem(SCORERS, "cloze")
    assert check("--pool", str(fake_pool), "--no-smoke") == 1
    registry = lines_of(capsys.readouterr().out, "registry")
    assert registry[0].startswith("FAIL registry: 1 gap(s)")
    assert any("no scorer for gold type 'cloze'" in line and "exam.jsonl" in line for line in registry[1:])


def test_a_judged_gold_type_without_a_judge_contract_fails_the_registry() -> None:
    items = load_demo_suite().items
    outcome = registry_outcome(items, contracts={"reference": object(), "criteria": object()})
    assert outcome.status == "FAIL"
    assert any("'probe' is judged under contract 'probe'" in line for line in outcome.details)


def test_an_item_that_changes_on_its_round_trip_is_named(fake_pool: Path, monkeypatch, capsys) -> None:
    written = Item.to_record
    monkeypatch.setattr(Item, "to_record", lambda self: {**written(self), "domain": None})
    assert check("--pool", str(fake_pool), "--no-smoke") == 1
    trip = lines_of(capsys.readouterr().out, "round trip")
    assert trip[0].startswith("FAIL round trip:") and "change when written and read back" in trip[0]
    assert all("domain changed on the way" in line for line in trip[1:] if not line.strip().startswith("..."))


def test_a_pool_file_that_does_not_validate_fails_with_its_line(write_pool: PoolWriter, capsys) -> None:
    pool = write_pool(
        "backends:\n  b:\n    type: openai\n    base_url: http://x/v1\n    max_concurency: 2\n"
        "models:\n  - name: m\n    backend: b\n",
        name="pool.yaml",
    )
    assert check("--pool", str(pool)) == 1
    out = capsys.readouterr().out
    assert status_of(out, "pool") == "FAIL"
    assert any(f"{pool}:5" in line and "max_concurency" in line for line in lines_of(out, "pool"))
    assert status_of(out, "keys and model files") == "SKIP" and status_of(out, "smoke") == "SKIP"


def test_an_unset_key_and_a_missing_model_file_fail_the_assets(
    tmp_path: Path, write_pool: PoolWriter, monkeypatch, capsys
) -> None:
    monkeypatch.delenv("MEDPOOL_CHECK_TEST_KEY", raising=False)
    pool = write_pool(
        "backends:\n  api:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n"
        "    api_key_env: MEDPOOL_CHECK_TEST_KEY\n  local:\n    type: llamacpp\n"
        "models:\n  - name: hosted\n    backend: api\n  - name: mine\n    backend: local\n"
        f"    gguf: {tmp_path / 'absent.gguf'}\n",
        name="pool.yaml",
    )
    assert check("--pool", str(pool)) == 1
    out = capsys.readouterr().out
    assets = lines_of(out, "keys and model files")
    assert assets[0].startswith("FAIL keys and model files: 2 problem(s)")
    assert any(f"{pool}:5" in line and "backend 'api' needs an API key" in line for line in assets)
    assert any("absent.gguf does not exist" in line for line in assets)
    assert status_of(out, "smoke") == "SKIP"


def test_a_key_that_is_set_is_never_printed(write_pool: PoolWriter, monkeypatch, capsys) -> None:
    monkeypatch.setenv("MEDPOOL_CHECK_TEST_KEY", "sk-do-not-print-me")
    pool = write_pool(
        "backends:\n  api:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n"
        "    api_key_env: MEDPOOL_CHECK_TEST_KEY\nmodels:\n  - name: hosted\n    backend: api\n",
        name="pool.yaml",
    )
    check("--pool", str(pool), "--no-smoke")
    captured = capsys.readouterr()
    assert "1 key variable(s) set" in captured.out
    assert "sk-do-not-print-me" not in captured.out + captured.err


def test_judged_items_without_a_judge_fail_judge_free_items_pass(tmp_path: Path, capsys) -> None:
    pool = write_fake_pool(tmp_path / "pool.yaml", dead_url(), judge=None)
    assert check("--pool", str(pool), "--no-smoke") == 1
    judge = lines_of(capsys.readouterr().out, "judge")[0]
    assert judge.startswith("FAIL judge: no judge:") and "criteria, probe, reference" in judge
    data = write_jsonl(tmp_path / "suite" / "items.jsonl", [CHOICE])
    assert check("--pool", str(pool), "--data", str(data), "--no-smoke") == 0
    assert "no judged items loaded; no judge needed" in capsys.readouterr().out


@pytest.mark.parametrize(
    "args, said",
    [
        (["--pool", "no-such-pool.yaml"], "--pool no-such-pool.yaml: no such file"),
        (["--data", "no/such/folder"], "--data no/such/folder: no such file"),
        (["--models", "nobody"], "--models: unknown model(s) nobody"),
        (["--models", ""], "--models is empty"),
    ],
)
def test_bad_input_is_exit_2(fake_pool: Path, args: list[str], said: str, capsys) -> None:
    if "--pool" not in args:
        args = ["--pool", str(fake_pool), *args]
    assert check(*args, "--no-smoke") == 2
    assert said in capsys.readouterr().err


def test_the_reference_suites_load_and_round_trip(fake_pool: Path, capsys) -> None:
    need_shared(SHARED_DATA)
    assert check("--pool", str(fake_pool), "--data", str(SHARED_DATA), "--no-smoke") == 0
    out = capsys.readouterr().out
    suites = lines_of(out, "suites")
    assert "capability" in suites[0] and "specialty" in suites[0]
    assert any("validity" in line for line in suites[1:])  # unverified probes are skipped with their reason
    assert status_of(out, "round trip") == "PASS"


# --- the smoke ----------------------------------------------------------------------------------


def test_the_smoke_takes_the_item_with_the_smallest_answer_budget_of_each_track() -> None:
    chosen = one_per_track(load_demo_suite().items)
    assert len({i.track for i in chosen}) == len(chosen) == len({i.track for i in load_demo_suite().items})
    for item in chosen:
        same_track = [i for i in load_demo_suite().scorable_items if i.track == item.track]
        assert item.max_tokens == min(i.max_tokens or 10**9 for i in same_track)


@pytest.fixture()
def servers(tmp_path: Path, monkeypatch, fakes: ThreadedFakes) -> tuple[FakeOpenAIServer, FakeOpenAIServer]:
    """A candidate server that answers, and a judge server that only counts what it is sent; the
    smoke's temporary folders (kept on a failure) go under the test's own folder."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    candidate = fakes.start(FakeOpenAIServer())
    judge = fakes.start(FakeOpenAIServer())
    return candidate, judge


def smoke_pool(path: Path, candidate_url: str, judge_url: str, *, dead_url: str | None = None) -> Path:
    """Candidate ``alive`` (and ``ghost`` on a dead server, when given) and an inline judge on its own backend."""
    lines = [
        "backends:",
        "  cand:",
        "    type: openai",
        f"    base_url: {candidate_url}",
        "  referee:",
        "    type: openai",
        f"    base_url: {judge_url}",
    ]
    if dead_url:
        lines += ["  deadb:", "    type: openai", f"    base_url: {dead_url}", "    max_retries: 0"]
    lines += ["models:", "  - name: alive", "    backend: cand", "    max_tokens: 16"]
    if dead_url:
        lines += ["  - name: ghost", "    backend: deadb"]
    lines += ["judge:", "  backend: referee", "  model: fake-judge", "  temperature: 0"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_the_smoke_answers_one_item_per_track_and_never_asks_the_judge(servers, tmp_path: Path, capsys) -> None:
    candidate, judge = servers
    pool = smoke_pool(tmp_path / "pool.yaml", candidate.base_url, judge.base_url)
    assert check("--pool", str(pool)) == 0
    out = capsys.readouterr().out
    tracks = sorted({i.track for i in load_demo_suite().scorable_items})
    smoke = lines_of(out, "smoke")[0]
    assert smoke.startswith(f"PASS smoke: 1 model(s) × {len(tracks)} item(s)") and "no judge called" in smoke
    assert candidate.request_count == len(tracks)  # no cache: every answer was asked
    assert judge.request_count == 0
    assert out.rstrip().endswith("gate: all checks passed")


def test_a_dead_candidate_server_fails_the_smoke_naming_its_backend(servers, tmp_path: Path, capsys) -> None:
    candidate, judge = servers
    pool = smoke_pool(tmp_path / "pool.yaml", candidate.base_url, judge.base_url, dead_url=dead_url())
    assert check("--pool", str(pool)) == 1
    smoke = lines_of(capsys.readouterr().out, "smoke")
    assert smoke[0].startswith("FAIL smoke: 1 of 2 model(s) did not answer every item")
    named = [line for line in smoke[1:] if line.strip().startswith("model ")]
    assert len(named) == 1 and "model ghost (backend 'deadb'" in named[0] and "connection" in named[0]
    assert "smoke's run folder is kept" in smoke[0]
    assert judge.request_count == 0


@requires_llama
def test_the_smoke_starts_the_managed_llamacpp_server_of_the_shipped_pool(tmp_path: Path, capsys) -> None:
    """One short item, one small model of the shipped pool: the real server is started, asked, stopped."""
    data = write_jsonl(tmp_path / "suite" / "items.jsonl", [{**CHOICE, "max_tokens": 8}])
    outcomes = list(gate(CheckSpec(pool=REPO / "model_pool.yaml", data=[data], models=["smollm2-135m"])))
    smoke = outcomes[-1]
    assert smoke.check == "smoke" and smoke.status == "PASS", smoke.lines()
    assert all(o.status == "PASS" for o in outcomes), [o.lines() for o in outcomes]
