"""``python -m routing.scenario`` on a run of FAKE models whose measured order is known.

The shortlist is the screen of tests/data/screen/evidence for cardiology / specialty: theory order
qwen2.5-7b-instruct (0.898) > llama3-8b-q4 (0.738) > smollm2-135m (0.4, the prior); mistral-nemo is
skipped and never run. The FAKE server plays the candidates and the judge: the judge grades each
answer by the candidate's marker, so the measured specialty order is qwen (0.85) > smollm (0.65) >
llama (0.35) — one pair the other way round, clearly. smollm's answers are all judged unsupported
by any source and it never calls a tool: both warnings fire for it alone.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pool import RunSpec, run_pool
from pool.api import EXIT_OK
from routing.scenario.__main__ import main as scenario_main
from routing.screen.__main__ import main as screen_main
from routing.screen.shortlist import read_shortlist
from tests.fake_pool import PADDING, write_jsonl
from tests.fakes import ok

EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "screen" / "evidence"
MARKERS = {"qwen2.5-7b-instruct": "【甲】", "llama3-8b-q4": "【丙】", "smollm2-135m": "【乙】"}
BASE = {"【甲】": 8, "【乙】": 6, "【丙】": 3}  # every rubric dimension of 10, +1 on odd items
N = 8
CRITERIA = [
    {
        "id": f"k{i}",
        "task": "consult",
        "track": "specialty",
        "domain": "cardiology:hypertension",
        "gold_type": "criteria",
        "question": f"第{i}题：高血压患者平时要注意什么？",
        "gold": {"expected_topics": ["限盐"], "must_warn": [], "must_not": []},
    }
    for i in range(N)
]
TOOLS = [
    {
        "id": f"t{i}",
        "task": "tool_decision",
        "track": "orchestration",
        "gold_type": "tool_decision",
        "messages": [
            {"role": "system", "content": "你可以调用工具 query_lab(patient_id)：查询检验结果。需要调用时只输出调用。"},
            {"role": "user", "content": f"查一下{i}号床的血钾。"},
        ],
        "gold": "call",
    }
    for i in range(4)
]


def behave(index: int, payload: dict) -> object:
    model, messages = payload.get("model"), payload.get("messages") or []
    text = json.dumps(messages, ensure_ascii=False)
    if model in MARKERS:
        if "query_lab" in text:
            return ok("直接回答：请稍候。" if model == "smollm2-135m" else "query_lab(patient_id='3')")
        return ok(MARKERS[model] + PADDING)
    marker = next(m for m in BASE if m in text)  # the judge
    item = int(re.search(r"第(\d+)题", text).group(1))
    dim = BASE[marker] + item % 2
    verdict = {"coverage": dim, "accuracy": dim, "safety": dim, "grounding": dim, "rationale": "fake"}
    verdict["grounding_source"] = "unsupported" if marker == "【乙】" else "guideline"
    return ok(json.dumps(verdict, ensure_ascii=False))


@pytest.fixture
def measured_run(tmp_path: Path, fake_openai, write_pool) -> tuple[Path, Path]:
    screen = tmp_path / "screen"
    names = ",".join([*MARKERS, "mistral-nemo"])
    args = ["--evidence", str(EVIDENCE), "--models", names, "--domain", "cardiology", "--axis", "specialty"]
    assert screen_main([*args, "--top", "3", "--out", str(screen)]) == 0
    shortlist = read_shortlist(screen / "shortlist.yaml")
    assert shortlist.models("optional") == ("qwen2.5-7b-instruct", "llama3-8b-q4", "smollm2-135m")
    url = fake_openai(behave)
    models = "\n".join(f"  - {{name: {m}, backend: fake, max_tokens: 64}}" for m in MARKERS)
    pool = write_pool(
        f"backends:\n  fake: {{type: openai, base_url: '{url}', max_retries: 0}}\nmodels:\n{models}\n"
        "  - {name: judgey, backend: fake, enabled: false}\njudge:\n  model: judgey\n"
    )
    data = write_jsonl(tmp_path / "suite" / "items.jsonl", CRITERIA + TOOLS)
    spec = RunSpec(
        pool=pool,
        data=[data],
        models=list(shortlist.models("optional")),
        track="specialty,orchestration",
        out=tmp_path / "run",
        no_cache=True,
        no_routing=True,
    )
    assert run_pool(spec).exit_code == EXIT_OK
    return tmp_path / "run", screen / "shortlist.yaml"


def test_theory_against_the_known_measured_order(measured_run: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    run, shortlist = measured_run
    assert scenario_main([str(run), "--shortlist", str(shortlist), "--out", str(tmp_path / "out")]) == 0
    reports = list((tmp_path / "out" / "reports").glob("cardiology-specialty-*.md"))
    assert len(reports) == 1 and re.fullmatch(r"cardiology-specialty-\d{4}-\d\d-\d\d\.md", reports[0].name)
    text = reports[0].read_text(encoding="utf-8")
    assert str(reports[0]) in capsys.readouterr().out

    order = text.split("## Theory order against measured order")[1].split("## Warnings")[0]
    rows = re.findall(r"^\| (\S+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \[[^]]+\] n=(\d+) \| ([\d.]+) \|", order, re.M)
    got = {model: (float(theory), float(t_rank), float(m_rank), int(n)) for model, theory, t_rank, _, n, m_rank in rows}
    assert got == {
        "qwen2.5-7b-instruct": (0.898, 1, 1, N),
        "llama3-8b-q4": (0.738, 2, 3, N),
        "smollm2-135m": (0.4, 3, 2, N),
    }
    assert "Measured on **specialty, domain cardiology**" in order
    assert "Spearman's ρ = 0.500 over n = 3" in order  # 1 − 6·(0 + 1 + 1) / (3·8)
    disagreements = [line for line in order.splitlines() if line.startswith("- theory puts")]
    assert len(disagreements) == 1
    assert "**llama3-8b-q4** (0.738) above **smollm2-135m** (0.400)" in disagreements[0]
    assert "a clear disagreement" in disagreements[0]

    warnings = text.split("## Warnings")[1].split("## Ceiling references")[0]
    assert re.search(r"\*\*smollm2-135m\*\*: unsupported rate 1\.000 .* ≥ 0\.2", warnings)
    assert re.search(r"\*\*smollm2-135m\*\*: orchestration 0\.000 .* < 0\.5", warnings)
    assert "qwen2.5-7b-instruct" not in warnings and "llama3-8b-q4" not in warnings

    candidates = text.split("## Candidates")[1].split("## Theory order")[0]
    qwen = next(line for line in candidates.splitlines() if line.startswith("| qwen2.5-7b-instruct"))
    cells = [c.strip() for c in qwen.strip("|").split("|")]
    assert cells[1:3] == ["must-test", "0.898"]
    assert cells[3] == "—"  # no capability item: not measured, never filled from another family
    assert cells[4].startswith("0.850") and "n=8" in cells[4] and cells[5].startswith("0.000")
    assert cells[6].startswith("1.000") and "n=4" in cells[6]

    ceilings = text.split("## Ceiling references")[1].split("## Not compared")[0]
    assert "Best local candidate on specialty: **qwen2.5-7b-instruct**" in ceilings
    assert "- below **Qwen2.5-72B-Instruct**: published 0.99" in ceilings
    assert "- not below Llama-3-8B: published 0.6" in ceilings
    assert "DeepSeek-R1-Distill-Qwen-7B (Entry C, an online leaderboard with contamination controls): no published" in (
        ceilings
    )
    assert "- mistral-nemo (skip): shortlisted, no scored row in this run" in text


def test_bad_inputs_exit_2(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "shortlist.yaml"
    bad.write_text("kind: medpool-shortlist\nschema_version: 9\n", encoding="utf-8")
    assert scenario_main([str(tmp_path), "--shortlist", str(bad)]) == 2
    assert "schema_version: 9" in capsys.readouterr().err
    good = tmp_path / "screen"
    assert screen_main(["--evidence", str(EVIDENCE), "--models", "x", "--out", str(good)]) == 0
    assert scenario_main([str(tmp_path / "nowhere"), "--shortlist", str(good / "shortlist.yaml")]) == 2
    assert "nowhere: not a directory" in capsys.readouterr().err
