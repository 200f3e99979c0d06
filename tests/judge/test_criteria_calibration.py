"""``python -m pool.calibrate --set criteria`` against FAKE judges of known quality (a FAKE OpenAI
server in a background thread): an exact judge that reads the criteria's own words in the answer,
one that says every criterion is met, one that says none is, panels of them, a judge whose
behaviour changes behind the same identity (drift), and judges that never answer. The set is
built from the small suite of tests/judge/calibration_fixtures.py, so every expected number follows
from the set itself."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval.loaders import load_items
from judge.calibration.criteria_set import CriteriaCalibrationSet, criteria_calibration_set
from judge.calibration.store import calibrations, for_stages, judge_key
from judge.contracts.criteria import CRITERIA_SYSTEM
from judge.contracts.criteria_items import CRITERIA_ITEMS_SYSTEM, KINDS, kind_of
from pool.calibrate.cli import main
from tests.fake_pool import FakeOpenAIStarter
from tests.fakes import ok, server_error
from tests.judge.calibration_fixtures import (
    calibration_pool,
    criteria_of,
    fenced_answer,
    rubric,
    topics_of,
    write_suite,
)

PER_ITEM = 3  # with FORBIDDEN_EVERY = 3, every item's third answer says one forbidden thing
ANSWERS = 4 * PER_ITEM

# --- fake judges ------------------------------------------------------------------------------

Reply = Callable[[str, str, str], Any]  # (contract, user message, fenced answer) → reply text


def items_reply(met: dict[str, bool]) -> str:
    return json.dumps(
        {"items": [{"id": i, "met": m, "evidence": ""} for i, m in met.items()], "flags": []}, ensure_ascii=False
    )


def exact(contract: str, user: str, answer: str) -> str:
    """Reads each criterion's own words in the answer; coverage = round(10 × share of topics present)."""
    if contract == "criteria_items":
        return items_reply({i: text in answer for i, text in criteria_of(user).items()})
    topics = topics_of(user)
    return rubric(round(10 * sum(t in answer for t in topics) / len(topics)))


def always(met: bool) -> Reply:
    """Says every criterion is met (or none is); coverage 10 (or 0) whatever the answer."""

    def reply(contract: str, user: str, answer: str) -> str:
        return (
            items_reply(dict.fromkeys(criteria_of(user), met))
            if contract == "criteria_items"
            else rubric(10 if met else 0)
        )

    return reply


def blind_to_warnings(contract: str, user: str, answer: str) -> str:
    """The exact judge, except that it never finds a warning."""
    if contract == "criteria_items":
        return items_reply({i: text in answer and not i.startswith("W") for i, text in criteria_of(user).items()})
    return exact(contract, user, answer)


class FakeJudges:
    """Replies by the request's model id; ``stammer`` models answer the first request of each contract in prose."""

    def __init__(self, replies: dict[str, Reply], stammer: frozenset[str] = frozenset()) -> None:
        self.replies = replies
        self.stammer = stammer
        self.stammered: set[tuple[str, str]] = set()
        self.requests: dict[str, int] = {}

    def __call__(self, index: int, payload: dict[str, Any]) -> Any:
        model, messages = payload["model"], payload["messages"]
        self.requests[model] = self.requests.get(model, 0) + 1
        reply = self.replies[model]
        if not callable(reply):
            return reply  # a Behavior (a server error)
        contract = {CRITERIA_ITEMS_SYSTEM: "criteria_items", CRITERIA_SYSTEM: "criteria"}[messages[0]["content"]]
        if model in self.stammer and len(messages) == 2 and (model, contract) not in self.stammered:
            self.stammered.add((model, contract))
            return ok("我认为这个回答总体还不错，覆盖了大部分要点。")
        return ok(reply(contract, messages[1]["content"], fenced_answer(messages[1]["content"])))


def write_pool(tmp_path: Path, base_url: str, judges: list[str], rule: str = "majority") -> Path:
    """A pool whose judge (one model id) or judges: panel (several) are the fake's models."""
    entries = (
        [f"  backend: fake\n  name: {judges[0]}\n  model: {judges[0]}\n  temperature: 0\n"]
        if len(judges) == 1
        else [f"  - {{backend: fake, name: {j}, model: {j}, temperature: 0}}\n" for j in judges]
    )
    block = (
        ("judge:\n" if len(judges) == 1 else "judges:\n")
        + "".join(entries)
        + (f"panel_rule: {rule}\n" if len(judges) > 1 else "")
    )
    return calibration_pool(tmp_path, base_url, block)


def the_set(tmp_path: Path) -> CriteriaCalibrationSet:
    return criteria_calibration_set(load_items([write_suite(tmp_path)]).items, PER_ITEM, None, 0)


def calibrate(tmp_path: Path, pool: Path, *extra: str) -> int:
    return main(
        [
            "--pool",
            str(pool),
            "--set",
            "criteria",
            "--suite",
            str(write_suite(tmp_path)),
            "--per-item",
            str(PER_ITEM),
            "--store",
            str(tmp_path / "store"),
            "--cache-dir",
            str(tmp_path / "cache"),
            *extra,
        ]
    )


def stored(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """Every calibration file of the store by the judge's name."""
    return {record["identity"]["name"]: record for record in calibrations(tmp_path / "store")}


def prevalence(answers: CriteriaCalibrationSet, kind: str) -> float:
    truths = [t for a in answers.answers for cid, t in a.truth.items() if kind_of(cid) == kind]
    return sum(truths) / len(truths)


# --- (a) the exact judge ------------------------------------------------------------------------


def test_an_exact_judge_scores_f1_one_and_ranks_coverage(
    tmp_path: Path, fake_openai: FakeOpenAIStarter, capsys: pytest.CaptureFixture[str]
) -> None:
    judges = FakeJudges({"exact": exact}, stammer=frozenset({"exact"}))
    pool = write_pool(tmp_path, fake_openai(judges), ["exact"])
    assert calibrate(tmp_path, pool) == 0
    out = capsys.readouterr().out
    assert "exact" in out and "stored in" in out and f"{ANSWERS} answers" in out
    [record] = stored(tmp_path).values()
    entry = record["history"][0]
    overall = entry["metrics"]["overall"]
    for kind in KINDS:
        assert overall[kind]["f1"] == 1.0 and overall[kind]["precision"] == 1.0 and overall[kind]["recall"] == 1.0, kind
        assert overall[kind]["no_verdict"] == 0 and overall[kind]["coverage"] == 1.0
    assert overall["forbidden"]["tp"] == 4  # one forbidden statement in every item's third answer
    assert overall["holistic"]["spearman"] > 0.9 and overall["holistic"]["scored"] == ANSWERS
    assert overall["answers_judged"] == ANSWERS
    # one request per answer and contract, plus one re-ask per contract for the prose replies
    assert judges.requests["exact"] == 2 * ANSWERS + 2 and entry["requests"]["calls"] == 2 * ANSWERS + 2
    assert entry["set"]["kind"] == "criteria" and entry["set"]["answers"] == ANSWERS
    assert entry["set"]["sha256"] == the_set(tmp_path).sha256
    identity = record["identity"]
    assert identity["set_kind"] == "criteria" and {"criteria", "criteria_items"} <= set(identity["prompt_versions"])
    assert record["judge_key"] == judge_key(identity) and identity["model"] == "exact"
    first = entry["criteria"][0]
    assert first["id"].count("#") == 2 and first["predicted"] == first["truth"]
    # a run's report reads claim calibrations only: this file is not one
    stages = list(identity["run_stages"].values())
    assert for_stages([record], stages) == [] and for_stages([record], stages, set_kind="criteria") == [record]
    # again from the cache: nothing sent, no drift
    assert calibrate(tmp_path, pool) == 0
    assert judges.requests["exact"] == 2 * ANSWERS + 2
    latest = stored(tmp_path)["exact"]["history"][-1]
    assert latest["requests"]["cache_hits"] == 2 * ANSWERS + 2 and latest["drift"]["flagged"] is False


# --- (b) a judge that says everything is met ---------------------------------------------------


def test_a_judge_that_says_everything_is_met_has_recall_one_and_precision_the_prevalence(
    tmp_path: Path, fake_openai: FakeOpenAIStarter, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = write_pool(tmp_path, fake_openai(FakeJudges({"yes-man": always(True)})), ["yes-man"])
    assert calibrate(tmp_path, pool, "--json") == 0
    [printed] = json.loads(capsys.readouterr().out)
    assert printed["identity"]["name"] == "yes-man" and printed["judge_key"] == judge_key(printed["identity"])
    overall = stored(tmp_path)["yes-man"]["history"][0]["metrics"]["overall"]
    answers = the_set(tmp_path)
    for kind in KINDS:
        assert overall[kind]["recall"] == 1.0, kind
        assert overall[kind]["precision"] == pytest.approx(prevalence(answers, kind)), kind
        assert 0 < prevalence(answers, kind) < 1
    assert overall["holistic"]["spearman"] is None  # a constant coverage ranks nothing
    assert printed["metrics"]["overall"] == overall


# --- (c) panels --------------------------------------------------------------------------------


def test_a_majority_panel_of_exact_always_and_never_follows_the_exact_judge(
    tmp_path: Path, fake_openai: FakeOpenAIStarter, capsys: pytest.CaptureFixture[str]
) -> None:
    judges = FakeJudges({"exact": exact, "yes-man": always(True), "naysayer": always(False)})
    pool = write_pool(tmp_path, fake_openai(judges), ["exact", "yes-man", "naysayer"])
    assert calibrate(tmp_path, pool) == 0
    records = stored(tmp_path)
    assert set(records) == {"exact", "yes-man", "naysayer", "panel:exact,yes-man,naysayer"}
    panel = records["panel:exact,yes-man,naysayer"]
    # the two others always disagree, so the exact judge's vote is the deciding one: 2 of 3 on every criterion
    exact_entry, panel_entry = records["exact"]["history"][0], panel["history"][0]
    assert [c["predicted"] for c in panel_entry["criteria"]] == [c["predicted"] for c in exact_entry["criteria"]]
    assert all(c["predicted"] == c["truth"] for c in panel_entry["criteria"])
    for kind in KINDS:
        assert panel_entry["metrics"]["overall"][kind]["f1"] == 1.0
    # the median of coverages (exact, 10, 0) is the exact judge's
    assert [a["coverage"] for a in panel_entry["answers"]] == [a["coverage"] for a in exact_entry["answers"]]
    assert (
        panel_entry["metrics"]["overall"]["holistic"]["spearman"]
        == exact_entry["metrics"]["overall"]["holistic"]["spearman"]
    )
    identity = panel["identity"]
    assert identity["rule"] == "majority" and identity["backend"] == "panel" and identity["set_kind"] == "criteria"
    assert identity["members"] == [records[n]["judge_key"] for n in ("exact", "yes-man", "naysayer")]
    assert panel_entry["requests"]["calls"] == 3 * 2 * ANSWERS
    table = capsys.readouterr().out
    assert all(name in table for name in records) and table.count("stored in") == 4


def test_a_reliability_panel_weighs_the_agreeing_exact_judges_most(
    tmp_path: Path, fake_openai: FakeOpenAIStarter
) -> None:
    # (exact, always met, never met) would not do here: "every criterion is met" and "none is" can both
    # be the truth with equal likelihood, so Dawid–Skene cannot tell which of the three is right.
    judges = FakeJudges({"exact": exact, "twin": exact, "yes-man": always(True)})
    pool = write_pool(tmp_path, fake_openai(judges), ["exact", "twin", "yes-man"], rule="reliability")
    assert calibrate(tmp_path, pool) == 0
    entry = stored(tmp_path)["panel:exact,twin,yes-man"]["history"][0]
    accuracy = entry["reliability"]["estimated_accuracy"]
    assert accuracy["exact"] == pytest.approx(accuracy["twin"]) and accuracy["exact"] > 0.95 > accuracy["yes-man"]
    assert entry["reliability"]["votes"] == sum(len(a.truth) for a in the_set(tmp_path).answers)
    for kind in KINDS:
        assert entry["metrics"]["overall"][kind]["f1"] == 1.0


# --- (d) history and drift ---------------------------------------------------------------------


def test_a_changed_judge_behind_the_same_identity_flags_drift(tmp_path: Path, fake_openai: FakeOpenAIStarter) -> None:
    judges = FakeJudges({"exact": exact})
    pool = write_pool(tmp_path, fake_openai(judges), ["exact"])
    assert calibrate(tmp_path, pool, "--no-cache") == 0
    judges.replies["exact"] = blind_to_warnings
    assert calibrate(tmp_path, pool, "--no-cache") == 0
    [record] = stored(tmp_path).values()
    first, second = record["history"]
    assert first["drift"] is None
    drift = second["drift"]
    assert drift["flagged"] is True and drift["against"] == first["calibrated_at"]
    assert (
        drift["delta"]["warning_f1"] == -1.0
        and drift["delta"]["topic_f1"] == 0.0
        and drift["delta"]["holistic_spearman"] == 0.0
    )
    warned = [c["id"] for c in first["criteria"] if c["kind"] == "warning" and c["truth"]]
    assert drift["changed_criteria"] == warned and warned


# --- (e) judges that never answer --------------------------------------------------------------


def test_a_judge_that_never_answers_exits_1_and_stores_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = write_pool(tmp_path, "http://127.0.0.1:9/v1", ["exact"])  # nothing listens there
    assert calibrate(tmp_path, pool, "--no-cache") == 1
    assert not (tmp_path / "store").exists()
    assert "nothing stored" in capsys.readouterr().err


def test_a_dead_panel_member_stores_nothing_for_anyone(
    tmp_path: Path, fake_openai: FakeOpenAIStarter, capsys: pytest.CaptureFixture[str]
) -> None:
    judges = FakeJudges({"exact": exact, "yes-man": always(True), "dead": server_error(500)})
    pool = write_pool(tmp_path, fake_openai(judges), ["exact", "yes-man", "dead"])
    assert calibrate(tmp_path, pool, "--no-cache") == 1
    assert not (tmp_path / "store").exists()
    captured = capsys.readouterr()
    assert "nothing stored" in captured.err and "not stored" in captured.out


# --- (f) bad input -----------------------------------------------------------------------------


def test_bad_input_exits_2_naming_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool = write_pool(tmp_path, "http://127.0.0.1:9/v1", ["exact"])
    missing = tmp_path / "nope.yaml"
    assert main(["--pool", str(pool), "--set", "criteria", "--suite", str(missing)]) == 2
    assert f"{missing}: not found (--suite)" in capsys.readouterr().err
    reference = tmp_path / "reference.jsonl"
    reference.write_text(
        json.dumps(
            {"id": "r1", "task": "qa", "track": "capability", "gold_type": "reference", "question": "q?", "gold": "a"}
        )
        + "\n"
    )
    assert main(["--pool", str(pool), "--set", "criteria", "--suite", str(reference)]) == 2
    assert f"{reference}: no scorable criteria items" in capsys.readouterr().err
    assert (
        main(["--pool", str(pool), "--set", "criteria", "--suite", str(write_suite(tmp_path)), "--per-item", "0"]) == 2
    )
    assert "--per-item" in capsys.readouterr().err
    assert main(["--pool", str(pool), "--suite", str(write_suite(tmp_path))]) == 2
    assert "--suite: only with --set criteria" in capsys.readouterr().err
    assert (
        main(
            ["--pool", str(tmp_path / "missing-pool.yaml"), "--set", "criteria", "--suite", str(write_suite(tmp_path))]
        )
        == 2
    )
    assert "missing-pool.yaml" in capsys.readouterr().err
