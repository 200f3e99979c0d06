"""CHIP test-set cases: answered on request (``--answer-unlabelled``) as answer-only units, never
scored or ranked, and ``python -m pool.chip_submission`` turning a run's answers into the task's
submission lines (``id@info;…@A;B@C@summary``). The cases are synthetic, written here in the task's
§4.2 field names."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import yaml

from eval.loaders import load_items
from eval.metrics.tcm.chip_format import ChipAnswer, format_chip_line, parse_chip_line, submission_safe
from pool.chip_submission import case_answer
from pool.items_source import select_items
from tests.local_models import requires_llama

REPO = Path(__file__).resolve().parents[2]
MECHANISMS = "A:肝气郁结;B:脾失健运;C:心血不足;D:胃失和降;E:痰湿内阻"
SYNDROMES = "A:肝郁脾虚;B:心脾两虚;C:痰湿中阻;D:肝胃不和"


def case(case_id: str, text: str, labelled: bool) -> dict[str, str]:
    record = {"案例编号": case_id, "临床资料": text, "病机选项": MECHANISMS, "证候选项": SYNDROMES}
    if labelled:
        record |= {
            "信息识别抽取能力：临床信息": "胁肋胀痛;纳差",
            "信息分析推断能力：病机": "肝气郁结;脾失健运",
            "病机答案": "A;B",
            "信息分析推断能力：证候": "肝郁脾虚",
            "证候答案": "A",
            "信息解释总结能力：临证体会和辨证结果": "临证体会：情志不畅，肝郁乘脾。辨证：肝郁脾虚。",
        }
    return record


def chip_file(folder: Path) -> Path:
    """Two labelled cases and two test-set cases (no gold), one JSON object per line."""
    cases = [
        case("案例1", "张某，男，45岁。两胁胀痛一月，纳差，便溏。舌淡苔白，脉弦。", True),
        case("案例2", "李某，女，38岁。心悸失眠，面色少华，倦怠乏力。舌淡，脉细弱。", False),
        case("案例3", "王某，男，52岁。胃脘胀满，嗳气，恶心。苔白腻，脉滑。", False),
        case("案例4", "赵某，女，29岁。情绪抑郁，胁痛，食少。舌淡红，脉弦细。", True),
    ]
    path = folder / "chip_cases.jsonl"
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    return path


def test_unlabelled_cases_are_kept_only_on_request(tmp_path):
    loaded = load_items([chip_file(tmp_path)])
    assert [i.local_id for i in select_items(loaded, {})] == ["案例1", "案例4"]
    kept = select_items(loaded, {"answer_unlabelled": True})
    assert [i.local_id for i in kept] == ["案例1", "案例2", "案例3", "案例4"]  # load order
    assert [i.scorable for i in kept] == [True, False, False, True]  # still unscorable: answer-only


def test_an_answer_becomes_a_submission_line(tmp_path):
    item = next(i for i in load_items([chip_file(tmp_path)]).items if i.local_id == "案例3")
    line = format_chip_line(case_answer(item, "胃脘胀满;嗳气;恶心@E;D@C@临证体会：痰湿阻胃。辨证：痰湿中阻。"))
    assert line == "案例3@胃脘胀满;嗳气;恶心@D;E@C@临证体会：痰湿阻胃。辨证：痰湿中阻。"  # letters sorted
    sections = (
        "（1）胃脘胀满，嗳气\n（2）胃失和降；痰湿内阻\n（3）痰湿中阻\n（4）临证体会：痰湿阻胃。\n辨证：痰湿中阻。"
    )
    parsed = parse_chip_line(format_chip_line(case_answer(item, sections)))
    assert parsed.case_id == "案例3" and parsed.mechanisms == ("D", "E") and parsed.syndromes == ("C",)
    assert "\n" not in parsed.summary and parsed.summary.endswith("辨证：痰湿中阻。")
    empty = format_chip_line(case_answer(item, "我不知道。"))
    assert empty == "案例3@@@@"  # an answer in neither shape is a line of empty answers, never a broken file
    thinking = (
        "<think>先看舌脉：苔白腻（湿）</think>\n"
        "胃脘（食后）胀满;嗳气@D；E@C@临证体会：痰湿阻胃，胃失和降。辨证：痰湿中阻。"
    )
    kept = parse_chip_line(format_chip_line(case_answer(item, thinking)))
    assert kept.clinical_info == ("胃脘（食后）胀满", "嗳气")  # the model's own full-width brackets, not "(食后)"
    assert kept.mechanisms == ("D", "E") and kept.summary == "临证体会：痰湿阻胃，胃失和降。辨证：痰湿中阻。"


def test_submission_safe_keeps_every_line_readable():
    unsafe = ChipAnswer("案例9", ("胀痛@胸骨后", "嗳气;恶心", "  "), ("A",), ("B",), "临证体会：\n郁热@胃。")
    safe = submission_safe(unsafe)
    assert safe.clinical_info == ("胀痛＠胸骨后", "嗳气，恶心") and safe.summary == "临证体会： 郁热@胃。"
    assert parse_chip_line(format_chip_line(safe)).clinical_info == safe.clinical_info


@requires_llama
def test_a_run_answers_the_test_set_and_writes_the_submission(tmp_path):
    data = chip_file(tmp_path)
    # the smallest local model and a short answer; no timeout or retry, so a busy machine is slow, not failed
    pool = {
        "backends": {"local": {"type": "llamacpp", "n_ctx": 2048, "timeout_s": 3600, "max_retries": 0}},
        "models": [
            {
                "name": "smollm2-135m",
                "backend": "local",
                "gguf": "smollm2-135m-instruct",
                "max_tokens": 16,
                "temperature": 0,
            }
        ],
    }
    pool_file = tmp_path / "pool.yaml"
    pool_file.write_text(yaml.safe_dump(pool, allow_unicode=True), encoding="utf-8")
    env = {**os.environ, "MEDPOOL_CACHE_DIR": str(tmp_path / "cache")}
    run_dir = tmp_path / "run"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pool.run",
            "--pool",
            str(pool_file),
            "--data",
            str(data),
            "--answer-unlabelled",
            "--out",
            str(run_dir),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    answers = [json.loads(line) for line in (run_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()]
    assert sorted(r["item_id"].rsplit("/", 1)[-1] for r in answers if r["stage"] == "answer") == [
        "案例1",
        "案例2",
        "案例3",
        "案例4",
    ]
    scores = {
        json.loads(line)["item_id"].rsplit("/", 1)[-1]: json.loads(line)
        for line in (run_dir / "scores.jsonl").read_text(encoding="utf-8").splitlines()
    }
    assert {k: s["status"] for k, s in scores.items()} == {
        "案例1": "scored",
        "案例2": "unscorable",
        "案例3": "unscorable",
        "案例4": "scored",
    }
    board = json.loads((run_dir / "leaderboard.json").read_text(encoding="utf-8"))
    cells = [cell for bucket in board["families"]["tcm"] if bucket["name"] == "chip_tcm" for cell in bucket["cells"]]
    assert cells and all((cell["n"], cell["unscorable"]) == (2, 2) for cell in cells)  # ranked on the labelled two
    assert "judged answers: none in this run" in run.stdout and (run_dir / "digest.md").is_file()

    def submit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pool.chip_submission", str(run_dir), *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )

    model = ("--model", "smollm2-135m")
    made = submit(*model, "--out", str(tmp_path / "test.txt"), "--unlabelled-only")
    assert made.returncode == 0, made.stderr
    lines = (tmp_path / "test.txt").read_text(encoding="utf-8").splitlines()
    assert [parse_chip_line(line).case_id for line in lines] == ["案例2", "案例3"]
    everything = submit(*model, "--out", str(tmp_path / "all.txt"))
    assert everything.returncode == 0, everything.stderr
    assert [
        parse_chip_line(line).case_id for line in (tmp_path / "all.txt").read_text(encoding="utf-8").splitlines()
    ] == ["案例1", "案例2", "案例3", "案例4"]

    with sqlite3.connect(run_dir / "run.sqlite") as db:  # as if the run had stopped before case 3 was answered
        db.execute("DELETE FROM results WHERE item_id LIKE ? AND stage = 'answer'", ("%/案例3",))
    missing = submit(*model, "--out", str(tmp_path / "partial.txt"), "--unlabelled-only")
    assert missing.returncode == 1 and "案例3" in missing.stderr and "--resume" in missing.stderr
    assert not (tmp_path / "partial.txt").exists()
    allowed = submit(*model, "--out", str(tmp_path / "partial.txt"), "--unlabelled-only", "--allow-missing")
    assert allowed.returncode == 0 and len((tmp_path / "partial.txt").read_text(encoding="utf-8").splitlines()) == 1
    wrong = submit("--model", "nobody", "--out", str(tmp_path / "x.txt"))
    assert wrong.returncode == 2 and "smollm2-135m" in wrong.stderr
