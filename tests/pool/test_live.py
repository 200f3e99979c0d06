"""Live runs (``python -m pool.run --live``, ``pool.live``) against FAKES of known quality: a reference agent
as an endpoint and as a command, candidates of known agreement with it, and a judge that scores exactly
that agreement (``tests.fakes.live_agent``)."""

from __future__ import annotations

import json
import re
import sqlite3
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
import yaml

from pool import RunResult, RunSpec, run_pool
from pool.config import PoolConfigError, parse_pool
from pool.live.agent import strip_decoration
from pool.live.command import command_line
from pool.live.questions import LiveQuestion, LiveRequest, distinct, from_text
from pool.run import main
from routing.nights.compare import compare_runs
from tests.fakes.live_agent import AGENT, JUDGE, LiveWorld, reference_for
from tests.fakes.openai_fake import FakeOpenAIServer
from tests.pool.cli_fixtures import ServedFake, run_cli, stop_or_dump
from tests.processes import count_results, eventually

AGREEMENT = {"exact": 1.0, "half": 0.5, "none": 0.0}
QUESTIONS = [f"家里老人血压偏高，第{n}个问题：日常吃饭和用药该注意什么？" for n in "一二三四五六"]
DOMAIN = "cardiology:hypertension"


def command_agent(tmp_path: Path, *extra: str, timeout_s: float = 60) -> str:
    """The ``reference_agent:`` block of the FAKE agent as a command that logs its calls in calls.txt."""
    argv = [sys.executable, "-m", "tests.fakes.live_agent", "{question}", "--mode", "{mode}"]
    argv += ["--calls", str(tmp_path / "calls.txt"), *extra]
    return f"reference_agent:\n  name: sibling\n  argv: {json.dumps(argv)}\n  timeout_s: {timeout_s}\n"


ENDPOINT_AGENT = f"reference_agent:\n  backend: fake\n  model: {AGENT}\n  name: {AGENT}\n"


def live_pool(tmp_path: Path, url: str, agent: str, models: dict[str, float] = AGREEMENT) -> Path:
    listed = "".join(f"  - name: {name}\n    backend: fake\n" for name in models)
    path = tmp_path / "pool.yaml"
    path.write_text(
        f"backends:\n  fake:\n    type: openai\n    base_url: {url}\n    max_concurrency: 4\n    max_retries: 0\n"
        f"models:\n{listed}judge:\n  backend: fake\n  model: {JUDGE}\n{agent}",
        encoding="utf-8",
    )
    return path


def questions_file(tmp_path: Path, questions: list[str], domain: str | None = DOMAIN) -> Path:
    path = tmp_path / "questions.jsonl"
    lines = [
        json.dumps({"question": q, **({"domain": domain} if domain else {})}, ensure_ascii=False) for q in questions
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def live_run(pool: Path, questions: list[str], out: Path, **fields) -> RunResult:
    request = LiveRequest(tuple(from_text("\n".join(questions), "questions.txt")), "patient")
    return run_pool(RunSpec(pool=str(pool), live=request, out=out, history_root=out.parent, no_cache=True, **fields))


def agent_calls(tmp_path: Path) -> Counter[str]:
    path = tmp_path / "calls.txt"
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return Counter(line.split("\t", 1)[1] for line in lines)


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- pieces ----------------------------------------------------------------------------------------


def test_ids_come_from_the_normalised_question_never_its_position() -> None:
    first = LiveQuestion("家里老人血压偏高，日常吃饭该注意什么？")
    same = LiveQuestion("  家里老人血压偏高,  日常吃饭该注意什么?  ")  # full-width punctuation and spaces: NFKC
    assert first.live_id("patient") == same.live_id("patient") != first.live_id("doctor")
    assert first.live_id("patient").startswith("patient-") and len(first.live_id("patient")) == len("patient-") + 12
    kept, notes = distinct([first, LiveQuestion("另一个问题"), same])
    assert kept == [first, LiveQuestion("另一个问题")] and len(notes) == 1


def test_question_files_are_lines_or_json_lines_and_errors_name_file_line_field() -> None:
    lines = from_text("# a comment\n问题一\n\n问题二\n", "q.txt")
    assert [(q.text, q.source) for q in lines] == [("问题一", "q.txt:2"), ("问题二", "q.txt:4")]
    given = from_text('{"question": "问题一", "domain": "cardiology:cad"}\n{"question": "问题二"}\n', "q.jsonl")
    assert [(q.text, q.domain) for q in given] == [("问题一", "cardiology:cad"), ("问题二", None)]
    for text, message in (
        ('{"question": "问题", "domian": "x:y"}\n', "q.jsonl:1: domian: unknown field"),
        ('{"question": "问题", "domain": "心内科"}\n', "q.jsonl:1: domain: must be"),
        ('{"question": ""}\n', "q.jsonl:1: question: must be a non-empty string"),
    ):
        with pytest.raises(ValueError, match=message):
            from_text(text, "q.jsonl")


def test_decoration_lines_are_stripped_as_the_sibling_agents_output_is() -> None:
    raw = "═══════════\n  答案第一行\n\n= = =\n答案第二行\n  ====  \n"
    assert strip_decoration(raw) == "答案第一行\n\n= = =\n答案第二行"
    assert strip_decoration("══════\n════\n") == ""


def test_a_command_gets_the_question_and_mode_in_one_pass_without_a_shell() -> None:
    argv = ["./ask.sh", "{question}", "--mode", "{mode}", "q={question}"]
    assert command_line(argv, "问 {mode} $(rm -rf /)", "doctor") == [
        "./ask.sh",
        "问 {mode} $(rm -rf /)",
        "--mode",
        "doctor",
        "q=问 {mode} $(rm -rf /)",
    ]


def test_the_pool_file_checks_a_reference_agent_like_a_judge() -> None:
    base = "backends:\n  b: {type: openai, base_url: http://x/v1}\nmodels:\n  - name: m\n    backend: b\n"
    assert parse_pool(base + "reference_agent: {model: m}\n").reference_agent_model().name == "m"
    for block, message in (
        ("reference_agent: {model: nobody}\n", "reference_agent.model: unknown pool model 'nobody'"),
        ("reference_agent: {argv: [ask.sh]}\n", r"reference_agent.argv: no argument holds \{question\}"),
        ('reference_agent: {argv: [ask.sh, "{question}"], model: m}\n', "reference_agent.model: model is for a"),
        ("reference_agent: {model: m, timeout_s: 3}\n", "reference_agent.timeout_s: timeout_s is for a command"),
    ):
        with pytest.raises(PoolConfigError, match=message):
            parse_pool(base + block, "pool.yaml")


def test_the_cli_refuses_what_a_live_run_cannot_do_naming_the_flag(tmp_path, capsys) -> None:
    out = ["--out", str(tmp_path / "run")]
    for argv, message in (
        (["--live", "--limit", "3", "问题", *out], "--limit with --live: a live run's items are its questions"),
        (["--live", "--dry-run", "问题"], "--dry-run with --live: use one"),
        (["--questions", "q.txt", *out], "--questions, --mode and QUESTION arguments are for a live run: add --live"),
        (["--live", "--questions", str(tmp_path / "none.txt"), *out], "--questions .*none.txt: cannot read it"),
    ):
        assert main(argv) == 2
        assert re.search(message, capsys.readouterr().err), argv
    assert not (tmp_path / "run").exists()


# --- runs against the fakes ------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["endpoint", "command"])
def test_the_live_family_ranks_candidates_by_their_agreement_with_the_agent(tmp_path, fakes, kind) -> None:
    world = LiveWorld(AGREEMENT)
    url = fakes.start(FakeOpenAIServer(behave=world)).base_url
    agent, name = (ENDPOINT_AGENT, AGENT) if kind == "endpoint" else (command_agent(tmp_path), "sibling")
    pool = live_pool(tmp_path, url, agent)
    request = LiveRequest(tuple(from_text(questions_file(tmp_path, QUESTIONS).read_text(), "q.jsonl")), "patient")
    result = run_pool(RunSpec(pool=str(pool), live=request, out=tmp_path / "run", history_root=tmp_path, no_cache=True))
    assert result.exit_code == 0, result.warnings
    run = tmp_path / "run"
    calls = world.agent_calls if kind == "endpoint" else agent_calls(tmp_path)
    assert calls == Counter(QUESTIONS)  # each question asked once
    items = jsonl(run / "live" / "items.jsonl")
    ids = {f"live/{name}/{LiveQuestion(q).live_id('patient')}" for q in QUESTIONS}
    assert {f"live/{i['task']}/{i['id']}" for i in items} == ids
    assert all(
        i["track"] == "live" and i["gold_type"] == "reference" and i["meta"]["gold_source"] == f"live:{name}"
        for i in items
    )
    assert {i["gold"] for i in items} == {reference_for(q, "patient") for q in QUESTIONS}  # decoration stripped
    scores = jsonl(run / "scores.jsonl")
    assert {(s["family"], s["track"], s["gold_source"]) for s in scores} == {("live", "live", f"live:{name}")}
    assert {s["item_id"] for s in scores} == ids and len(scores) == len(QUESTIONS) * len(AGREEMENT)
    board = json.loads((run / "leaderboard.json").read_text())
    assert set(board["families"]) == {"live"}  # never blended into capability
    (bucket,) = board["families"]["live"]
    assert bucket["id"] == f"live/domain/{DOMAIN}" and [c["model"] for c in bucket["cells"]] == [
        "exact",
        "half",
        "none",
    ]
    values = [c["primary"]["value"] for c in bucket["cells"]]
    assert values[0] > values[1] > values[2]
    manifest = yaml.safe_load((run / "routing_manifest.yaml").read_text())
    assert manifest["buckets"][f"live/domain/{DOMAIN}"]["model"] == manifest["families"]["live"]["model"] == "exact"
    for page in ("leaderboard.md", "report.html"):
        assert f"agreement with {name}, not truth" in (run / page).read_text()
    summary = json.loads((run / "summary.json").read_text())
    assert summary["extra"]["live"]["references"] == len(QUESTIONS) and summary["extra"]["live"]["agent"] == name


@pytest.mark.parametrize("kind", ["endpoint", "command"])
def test_a_failing_agent_yields_infra_errors_charged_to_it_never_a_candidates_zero(tmp_path, fakes, kind) -> None:
    world = LiveWorld(AGREEMENT, fail_on="FAIL")
    url = fakes.start(FakeOpenAIServer(behave=world)).base_url
    if kind == "endpoint":
        agent, failing, reasons = ENDPOINT_AGENT, ["FAIL 一个问题"], {"server_error"}
    else:  # a non-zero exit, and a command that never answers within its timeout
        agent = command_agent(tmp_path, "--fail-on", "FAIL", "--hold-on", "SLOW", timeout_s=2)
        failing, reasons = ["FAIL 一个问题", "SLOW 一个问题"], {"server_error", "timeout"}
    result = live_run(live_pool(tmp_path, url, agent), QUESTIONS[:5] + failing, tmp_path / "run")
    run = tmp_path / "run"
    assert result.exit_code == 1  # infra errors, all of them the agent's
    (line,) = [w for w in result.warnings if w.startswith("reference agent")]
    assert f"{len(failing)} of {5 + len(failing)} question(s) got no reference answer" in line
    references = jsonl(run / "live" / "references.jsonl")
    failed = [r for r in references if r["reference"] is None]
    assert sorted(r["question"] for r in failed) == sorted(failing)
    assert {r["error_class"] for r in failed} == reasons and all(r["status"] == "infra_error" for r in failed)
    scores = jsonl(run / "scores.jsonl")
    assert len(scores) == 5 * len(AGREEMENT) and all(s["status"] == "scored" for s in scores)  # nobody's zero
    assert not any("FAIL" in s["item_id"] for s in scores)
    summary = json.loads((run / "summary.json").read_text())
    assert all(m["status"].get("infra_error", 0) == 0 for m in summary["models"].values())
    live = summary["extra"]["live"]
    assert live["agent_infra_errors"] == len(failing) and set(live["by_error_class"]) == reasons


def test_the_same_question_on_two_nights_has_the_same_id_and_compares(tmp_path, fakes) -> None:
    world = LiveWorld(AGREEMENT)
    pool = live_pool(tmp_path, fakes.start(FakeOpenAIServer(behave=world)).base_url, ENDPOINT_AGENT)
    first = live_run(pool, QUESTIONS, tmp_path / "night1")
    # the next night: the first question typed with half-width punctuation and stray spaces, and one more
    again = [QUESTIONS[0].replace("，", ", ").replace("：", ": ") + "  ", *QUESTIONS[1:], "糖尿病人能吃水果吗？"]
    second = live_run(pool, again, tmp_path / "night2")
    assert first.exit_code == second.exit_code == 0
    night1, night2 = ({s["item_id"] for s in jsonl(tmp_path / n / "scores.jsonl")} for n in ("night1", "night2"))
    assert night1 < night2 and len(night2 - night1) == 1
    doc = compare_runs(tmp_path / "night1", tmp_path / "night2").to_json()
    assert doc["families"]["live"]["comparable"]
    deltas = [d for d in doc["deltas"] if d["family"] == "live"]
    assert {d["model"] for d in deltas} == set(AGREEMENT)
    assert all(d["n"] == len(QUESTIONS) for d in deltas)  # every question of night 1 paired by its id


def test_a_killed_live_run_resumes_without_asking_the_agent_again(tmp_path) -> None:
    """Killed while the agent answers (it holds on the third question), then killed while the candidates
    answer (the fake holds after 4 answers): each resume asks only what has no answer yet."""
    candidates = ServedFake(tmp_path, "--hold-after", "4")
    try:
        questions = ["问题一：高血压怎么吃？", "问题二：糖尿病怎么吃？", "问题三：痛风怎么吃？", "问题四：胃炎怎么吃？"]
        release = tmp_path / "release"
        pool = tmp_path / "pool.yaml"
        pool.write_text(
            textwrap.dedent(
                f"""\
                backends:
                  fake:
                    type: openai
                    base_url: {candidates.url}
                    max_concurrency: 1
                models:
                  - name: alpha
                    backend: fake
                    max_tokens: 16
                  - name: beta
                    backend: fake
                    max_tokens: 16
                """
            )
            + command_agent(tmp_path, "--hold-on", "问题三", "--release", str(release)),
            encoding="utf-8",
        )
        (tmp_path / "q.txt").write_text("\n".join(questions) + "\n", encoding="utf-8")
        run = tmp_path / "run"
        start = ["--live", "--questions", str(tmp_path / "q.txt"), "--pool", str(pool), "--out", str(run), "--no-cache"]
        proc = run_cli(*start, cache_dir=tmp_path / "cache")
        assert eventually(
            lambda: len(agent_calls(tmp_path)) == 3 and count_results(run / "live" / "run.sqlite") == 2, 60
        )
        proc.kill()
        proc.wait(10)
        assert not (run / "run.sqlite").exists() and (run / "live" / "request.json").is_file()
        release.touch()

        proc = run_cli("--resume", str(run), cache_dir=tmp_path / "cache")  # the agent's rest, then the candidates
        assert eventually(lambda: count_results(run / "run.sqlite") >= 4 or proc.poll() is not None, 60)
        assert proc.poll() is None, stop_or_dump(proc, 1)
        proc.kill()
        proc.wait(10)
        assert agent_calls(tmp_path) == Counter(questions) + Counter([questions[2]])  # the held one again, once

        candidates.release()
        proc = run_cli("--resume", str(run), cache_dir=tmp_path / "cache")
        out, err = stop_or_dump(proc, 120)
        assert proc.returncode == 0, err
        assert agent_calls(tmp_path) == Counter(questions) + Counter([questions[2]])  # not asked again
        with sqlite3.connect(run / "live" / "run.sqlite") as conn:
            assert conn.execute("SELECT status, COUNT(*) FROM results GROUP BY status").fetchall() == [("ok", 4)]
        answers = [r for r in jsonl(run / "results.jsonl") if r["stage"] == "answer"]
        assert len(answers) == 8 and all(r["status"] == "ok" for r in answers)
    finally:
        candidates.stop()
