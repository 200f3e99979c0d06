"""Judge calibration: the metrics on a hand-built confusion, the set loader, the store's history
and drift, and ``python -m pool.calibrate`` end to end against a FAKE OpenAI server playing a
judge whose labels are known, so P/R/F1 are exact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from eval.loaders.base import ItemFormatError
from judge.calibration.claim_set import (
    calibration_metrics,
    claim_label,
    load_calibration_set,
    metrics_by_tier,
)
from judge.calibration.store import drift, judge_key, record_calibration
from judge.verdicts import Claim, HalluVerdict
from pool.calibrate.claims import DEFAULT_SET
from pool.calibrate.cli import main
from routing.build import build
from tests.fakes import ThreadedFakes, ok
from tests.fakes.openai_fake import FakeOpenAIServer
from tests.judge.calibration_fixtures import calibration_pool

REPO = Path(__file__).resolve().parents[2]

# --- metrics ----------------------------------------------------------------------------------


def test_metrics_on_a_hand_built_confusion() -> None:
    gold = ["unsupported"] * 4 + ["supported"] * 3 + ["not_sure"] * 2
    pred = [
        "unsupported",
        "unsupported",
        "unsupported",
        "supported",  # TP TP TP FN
        "unsupported",
        "supported",
        None,  # FP TN (no verdict)
        "not_sure",
        "unsupported",
    ]
    m = calibration_metrics(gold, pred)
    u = m["unsupported"]
    assert (u["tp"], u["fp"], u["fn"], u["tn"]) == (3, 1, 1, 1)
    assert u["precision"] == pytest.approx(3 / 4) and u["recall"] == pytest.approx(3 / 4)
    assert u["f1"] == pytest.approx(2 * 3 / (2 * 3 + 1 + 1))
    assert m["accuracy_3class"] == pytest.approx(5 / 8)  # 8 labelled, 5 equal to gold
    assert (m["n"], m["labelled"], m["no_verdict"]) == (9, 8, 1)
    assert m["confusion"]["supported"] == {"supported": 1, "unsupported": 1, "not_sure": 0, "no_verdict": 1}
    assert m["confusion"]["not_sure"]["unsupported"] == 1


def test_undefined_rates_are_none_not_zero() -> None:
    m = calibration_metrics(["supported", "supported"], ["supported", "supported"])
    assert (
        m["unsupported"]["precision"] is None and m["unsupported"]["recall"] is None and m["unsupported"]["f1"] is None
    )
    m = calibration_metrics(["unsupported"], ["supported"])  # missed the only hallucination: F1 0, precision undefined
    assert m["unsupported"]["f1"] == 0.0 and m["unsupported"]["precision"] is None and m["unsupported"]["recall"] == 0.0
    with pytest.raises(ValueError, match="length"):
        calibration_metrics(["supported"], [])
    with pytest.raises(ValueError, match="gold labels"):
        calibration_metrics(["maybe"], ["supported"])


def test_a_split_claim_is_unsupported_if_any_part_is() -> None:
    def verdict(*labels: str) -> HalluVerdict:
        return HalluVerdict(tuple(Claim("c", label) for label in labels))  # type: ignore[arg-type]

    assert claim_label(verdict("supported", "unsupported")) == "unsupported"
    assert claim_label(verdict("supported", "not_sure")) == "supported"
    assert claim_label(verdict("not_sure")) == "not_sure"
    assert claim_label(verdict()) is None


# --- the set ----------------------------------------------------------------------------------

SET = """items:
  - {id: S1, claim: 高血压定义为诊室血压≥140/90 mmHg。, context: 什么是高血压？, gold: supported}
  - {id: S2, claim: ACEI 是一线降压药之一。, gold: supported}
  - {id: U1, claim: 氨氯地平每次500mg每日三次。, gold: unsupported}
  - {id: U2, claim: 糖尿病空腹血糖诊断切点为6.1。, gold: unsupported, tier: hard}
  - {id: U3, claim: 二甲双胍主要刺激胰岛素分泌。, gold: unsupported, tier: hard}
  - {id: N1, claim: 鱼油降低一般人群心血管事件。, gold: not_sure}
  - {id: X1, claim: 他汀可稳定斑块。, gold: supported, tier: hard}
"""
# What the fake judge says about each claim: S2 is a false alarm, U3 a miss, N1 needs the re-ask,
# X1 never parses (no verdict).
JUDGE_SAYS = {
    "S1": "supported",
    "S2": "unsupported",
    "U1": "unsupported",
    "U2": "unsupported",
    "U3": "not_sure",
    "N1": "not_sure",
    "X1": None,
}


def write_set(tmp_path: Path, text: str = SET) -> Path:
    path = tmp_path / "gold.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_loader_reads_tiers_and_names_bad_lines(tmp_path: Path) -> None:
    loaded = load_calibration_set(write_set(tmp_path))
    assert [c.id for c in loaded.claims] == list(JUDGE_SAYS)
    assert loaded.claims[0].tier == "easy" and loaded.claims[3].tier == "hard" and len(loaded.sha256) == 64
    bad = write_set(tmp_path, "items:\n  - {id: A, claim: x, gold: supported}\n  - {id: B, claim: y, gold: maybe}\n")
    with pytest.raises(ItemFormatError, match=r"gold.yaml:3: field 'gold': must be one of"):
        load_calibration_set(bad)
    dup = write_set(
        tmp_path, "items:\n  - {id: A, claim: x, gold: supported}\n  - {id: A, claim: y, gold: supported}\n"
    )
    with pytest.raises(ItemFormatError, match="duplicate id 'A'"):
        load_calibration_set(dup)


def test_the_shared_set_loads() -> None:
    if not DEFAULT_SET.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail(f"{DEFAULT_SET} is missing; ../shared/data is required in CI")
        pytest.skip(f"{DEFAULT_SET} absent (../shared/data is not beside this clone)")
    loaded = load_calibration_set(DEFAULT_SET)
    tiers = metrics_by_tier(loaded.claims, [c.gold for c in loaded.claims])
    assert tiers["overall"]["unsupported"]["f1"] == 1.0 and {"easy", "hard"} <= set(tiers["tiers"])


# --- the store --------------------------------------------------------------------------------


def entry(f1_labels: list[str | None], when: str, sha: str = "s") -> dict[str, Any]:
    gold = ["unsupported", "unsupported", "supported", "supported"]
    return {
        "calibrated_at": when,
        "set": {"sha256": sha},
        "metrics": {"overall": calibration_metrics(gold, f1_labels)},
        "claims": [{"id": str(i), "predicted": p} for i, p in enumerate(f1_labels)],
    }


def test_store_keeps_history_and_flags_drift_on_the_same_set(tmp_path: Path) -> None:
    identity = {"name": "j/1", "backend": "b", "temperature": 0}
    perfect = ["unsupported", "unsupported", "supported", "supported"]
    path, first = record_calibration(tmp_path, identity, entry(perfect, "t1"))
    assert path.name == judge_key(identity) + ".json" and path.name.startswith("j_1-") and first["drift"] is None
    _, same = record_calibration(tmp_path, identity, entry(perfect, "t2"))
    assert same["drift"]["flagged"] is False and same["drift"]["delta"]["f1"] == 0.0
    _, worse = record_calibration(
        tmp_path, identity, entry(["supported", "unsupported", "supported", "supported"], "t3")
    )
    assert worse["drift"]["flagged"] is True and worse["drift"]["against"] == "t2"
    assert worse["drift"]["changed_claims"] == ["0"] and worse["drift"]["delta"]["f1"] == pytest.approx(2 / 3 - 1)
    _, other_set = record_calibration(tmp_path, identity, entry(perfect, "t4", sha="other"))
    assert other_set["drift"] is None  # never compared across sets
    assert len(json.loads(path.read_text())["history"]) == 4
    assert drift(entry(perfect, "a"), entry(perfect, "b"))["flagged"] is False
    assert judge_key({**identity, "temperature": 1.0}) != judge_key(identity)


RUBRIC_VERDICT = json.dumps(
    {"coverage": 9, "accuracy": 9, "safety": 9, "grounding": 8, "rationale": "r", "grounding_source": "book"}
)

# --- the CLI against a fake judge -------------------------------------------------------------


def judge_replies(says: dict[str, str | None]) -> Callable[[int, dict[str, Any]], Any]:
    claims = {c.claim: c.id for c in load_calibration_set_from_text(SET)}

    def behave(index: int, payload: dict[str, Any]) -> Any:
        messages = payload.get("messages") or []
        if payload.get("model") != "judge-model-v1":
            return ok(
                "回答：诊室血压≥140/90 mmHg 可诊断高血压。"
            )  # a candidate, as long as the reference (the guard before the judge)
        if "rubric" in messages[0]["content"]:  # a run's rubric verdict
            return ok(RUBRIC_VERDICT)
        claim_id = next(cid for text, cid in claims.items() if text in messages[1]["content"])
        label = says[claim_id]
        reasked = len(messages) > 2
        if label is None or (claim_id == "N1" and not reasked):
            return ok("这条声明嘛，我也说不好")
        return ok(json.dumps({"claims": [{"claim": "c", "label": label}]}, ensure_ascii=False))

    return behave


def load_calibration_set_from_text(text: str) -> Any:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return load_calibration_set(write_set(Path(tmp), text)).claims


@pytest.fixture
def fake_judge(fakes: ThreadedFakes) -> Callable[[dict[str, str | None]], tuple[str, FakeOpenAIServer]]:
    """A fake judge in a background thread's loop, reachable from this process and from a subprocess."""

    def start(says: dict[str, str | None]) -> tuple[str, FakeOpenAIServer]:
        fake = fakes.start(FakeOpenAIServer(behave=judge_replies(says)))
        return fake.base_url, fake

    return start


def write_pool(tmp_path: Path, base_url: str) -> Path:
    return calibration_pool(
        tmp_path, base_url, "judge:\n  backend: fake\n  name: judgey\n  model: judge-model-v1\n  temperature: 0\n"
    )


def test_cli_end_to_end_gives_exact_metrics_and_stores_them(tmp_path: Path, fake_judge: Any) -> None:
    base_url, fake = fake_judge(JUDGE_SAYS)
    pool, gold, store = write_pool(tmp_path, base_url), write_set(tmp_path), tmp_path / "store"
    env = {**os.environ, "MEDPOOL_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, "-m", "judge.calibrate", "--pool", str(pool), "--set", str(gold), "--store", str(store)],
        check=False,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "F1" in out.stdout and "stored in" in out.stdout
    files = list(store.glob("*.json"))
    assert len(files) == 1 and files[0].name.startswith("judgey-")
    record = json.loads(files[0].read_text())
    overall, hard = record["history"][0]["metrics"]["overall"], record["history"][0]["metrics"]["tiers"]["hard"]
    # binary over labelled golds: S1 TN, S2 FP, U1 TP, U2 TP, U3 FN (X1 no verdict, N1 not_sure gold)
    assert (overall["unsupported"]["tp"], overall["unsupported"]["fp"], overall["unsupported"]["fn"]) == (2, 1, 1)
    assert overall["unsupported"]["precision"] == pytest.approx(2 / 3)
    assert overall["unsupported"]["recall"] == pytest.approx(2 / 3)
    assert overall["unsupported"]["f1"] == pytest.approx(2 / 3)
    assert overall["accuracy_3class"] == pytest.approx(4 / 6) and overall["no_verdict"] == 1
    assert hard["unsupported"]["precision"] == 1.0 and hard["unsupported"]["recall"] == 0.5
    assert record["identity"]["model"] == "judge-model-v1" and record["identity"]["endpoint"] == base_url
    assert set(record["identity"]["run_stages"]) == {"reference", "criteria", "probe"}
    assert all(s.startswith("judge:") for s in record["identity"]["run_stages"].values())
    claims = {c["id"]: c for c in record["history"][0]["claims"]}
    assert claims["N1"]["predicted"] == "not_sure" and claims["X1"]["predicted"] == "no_verdict"
    assert "unparseable after one re-ask" in claims["X1"]["reason"]
    assert fake.request_count == 7 + 2  # one per claim, a re-ask each for N1 and X1

    # Again, in-process: every reply from the cache, so no drift; history grows.
    assert (
        main(["--pool", str(pool), "--set", str(gold), "--store", str(store), "--cache-dir", str(tmp_path / "cache")])
        == 0
    )
    assert fake.request_count == 9
    history = json.loads(files[0].read_text())["history"]
    assert len(history) == 2 and history[1]["drift"]["flagged"] is False and history[1]["requests"]["cache_hits"] == 9


def test_cli_flags_drift_when_the_judge_changes_behind_the_same_identity(tmp_path: Path, fake_judge: Any) -> None:
    says = dict(JUDGE_SAYS)
    base_url, _ = fake_judge(says)
    pool, gold, store = write_pool(tmp_path, base_url), write_set(tmp_path), tmp_path / "store"
    assert main(["--pool", str(pool), "--set", str(gold), "--store", str(store), "--no-cache"]) == 0
    says.update({k: "supported" for k, v in JUDGE_SAYS.items() if v == "unsupported"})  # now misses every hallucination
    assert main(["--pool", str(pool), "--set", str(gold), "--store", str(store), "--no-cache"]) == 0
    [path] = store.glob("*.json")
    latest = json.loads(path.read_text())["history"][-1]
    assert latest["metrics"]["overall"]["unsupported"]["f1"] == 0.0
    assert latest["drift"]["flagged"] is True and latest["drift"]["delta"]["f1"] == pytest.approx(-2 / 3)
    assert set(latest["drift"]["changed_claims"]) == {"S2", "U1", "U2"}


def test_cli_input_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--pool", str(tmp_path / "missing.yaml"), "--set", str(write_set(tmp_path))]) == 2
    assert "missing.yaml" in capsys.readouterr().err
    assert main(["--set", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml: not found (--set)" in capsys.readouterr().err
    no_judge = tmp_path / "nojudge.yaml"
    no_judge.write_text(
        "backends:\n  b: {type: openai, base_url: 'http://127.0.0.1:9/v1'}\nmodels:\n  - {name: a, backend: b}\n"
    )
    assert main(["--pool", str(no_judge), "--set", str(write_set(tmp_path))]) == 2
    assert "no judge: block" in capsys.readouterr().err


def test_failed_judge_calls_store_nothing_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pool = write_pool(tmp_path, "http://127.0.0.1:9/v1")  # nothing listens there
    code = main(
        ["--pool", str(pool), "--set", str(write_set(tmp_path)), "--store", str(tmp_path / "store"), "--no-cache"]
    )
    assert code == 1 and not (tmp_path / "store").exists()
    assert "nothing stored" in capsys.readouterr().err


def test_a_run_judged_by_the_calibrated_judge_shows_the_calibration(tmp_path: Path, fake_judge: Any) -> None:
    base_url, _ = fake_judge(JUDGE_SAYS)
    pool, store = write_pool(tmp_path, base_url), tmp_path / "store"
    assert main(["--pool", str(pool), "--set", str(write_set(tmp_path)), "--store", str(store), "--no-cache"]) == 0
    data = tmp_path / "items.jsonl"
    data.write_text(
        json.dumps(
            {
                "id": "r1",
                "task": "qa",
                "track": "capability",
                "gold_type": "reference",
                "question": "高血压的诊断标准？",
                "gold": "诊室血压≥140/90 mmHg。",
            },
            ensure_ascii=False,
        )
        + "\n"
    )
    env = {**os.environ, "MEDPOOL_CACHE_DIR": str(tmp_path / "cache"), "MEDPOOL_CALIBRATION_DIR": str(store)}
    out = subprocess.run(
        [sys.executable, "-m", "pool.run", "--pool", str(pool), "--data", str(data), "--out", str(tmp_path / "run")],
        check=False,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    block = json.loads((tmp_path / "run" / "leaderboard.json").read_text())["judge_reliability"]
    [judge] = block["judges"].values()
    [calibration] = judge["calibration"]
    assert calibration["overall"]["f1"] == pytest.approx(2 / 3) and calibration["tiers"]["hard"]["recall"] == 0.5
    assert "Calibration on labelled claims" in (tmp_path / "run" / "report.html").read_text()
    # the same judge at another temperature is another identity: its calibration is not this run's
    other = tmp_path / "other.yaml"
    other.write_text(pool.read_text().replace("temperature: 0", "temperature: 0.7"))
    assert main(["--pool", str(other), "--set", str(write_set(tmp_path)), "--store", str(store), "--no-cache"]) == 0
    build([tmp_path / "run"], tmp_path / "out", calibration_dir=store)
    block = json.loads((tmp_path / "out" / "leaderboard.json").read_text())["judge_reliability"]
    assert len(next(iter(block["judges"].values()))["calibration"]) == 1 and len(list(store.glob("*.json"))) == 2
