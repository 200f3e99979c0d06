"""``pool.run --adaptive`` with FAKE models of known ability: a new model answers a tenth of the items
and its estimated full-suite score's interval holds its true full-suite score; it is marked estimated
in the leaderboard, report and manifest and is never a decision's pick; a judged family is asked in full."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import yaml

from bench.harness.specialists import LETTERS, question, unit
from pool import RunSpec, run_pool
from pool.adaptive import tests as adaptive_tests
from routing.bank.history import FamilyMatrix, fit_bank
from tests.fake_pool import FakeOpenAIStarter, score_rows, write_jsonl
from tests.fakes.irt_models import answers_right, irt_behaviour

ITEMS = 240
HISTORY = {f"h{i}": -1.6 + 0.4 * i for i in range(9)}  # nine fully evaluated models, θ from −1.6 to 1.6
NEW = {"newbie": 0.7, "ace": 2.6}


def _suite(path: Path) -> dict[str, str]:
    records, key = [], {}
    for i in range(ITEMS):
        text = question("T1", i, "irt")
        gold = LETTERS[int(unit(text + "/gold") * 4)]
        key[text] = gold
        records.append(
            {
                "id": f"irt-{i:03d}",
                "task": "T1",
                "track": "exam",
                "gold_type": "single_choice",
                "question": text,
                "options": {letter: f"选项{letter}" for letter in LETTERS},
                "gold": gold,
                "max_tokens": 8,
            }
        )
    write_jsonl(path, records)
    return key


def _pool(path: Path, base_url: str, models: dict[str, float]) -> Path:
    lines = ["backends:", "  fake:", "    type: openai", f"    base_url: {base_url}", "    max_concurrency: 8"]
    lines.append("models:")
    for name in models:
        lines += [f"  - name: {name}", "    backend: fake", f"    model: {name}", "    max_tokens: 8"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_new_model_scored_adaptively_lands_in_its_interval(tmp_path: Path, fake_openai: FakeOpenAIStarter) -> None:
    suite = tmp_path / "suite.jsonl"
    key = _suite(suite)
    base = fake_openai(irt_behaviour(key, {**HISTORY, **NEW}))
    runs, cache = tmp_path / "runs", tmp_path / "cache"
    common = dict(data=[str(suite)], no_judge=True, cache_dir=str(cache), history_root=str(runs), log_interval=60.0)
    night = run_pool(
        RunSpec(
            pool=str(_pool(tmp_path / "history.yaml", base, HISTORY)), out=str(runs / "n1"), no_routing=True, **common
        )
    )
    assert night.exit_code == 0

    result = run_pool(
        RunSpec(
            pool=str(_pool(tmp_path / "pool.yaml", base, {**HISTORY, **NEW})),
            out=str(runs / "n2"),
            adaptive=True,
            adaptive_se=0.5,
            **common,
        )
    )
    assert result.exit_code == 0, result.warnings
    estimates = json.loads((runs / "n2" / "adaptive.json").read_text(encoding="utf-8"))
    rows = score_rows(runs / "n2")
    for name, theta in NEW.items():
        estimate = estimates["models"][name]["exam"]
        full = 100 * sum(answers_right(theta, name, q) for q in key) / ITEMS
        assert estimate["estimated"] is True
        assert estimate["low"] <= full <= estimate["high"], (name, full, estimate)
        assert estimate["items_used"] <= ITEMS // 10
        assert sum(r["model"] == name for r in rows) == estimate["items_used"]
    assert all(sum(r["model"] == name for r in rows) == ITEMS for name in HISTORY)  # scored as today

    leaderboard = json.loads((runs / "n2" / "leaderboard.json").read_text(encoding="utf-8"))
    assert set(leaderboard["estimated"]) == set(NEW)
    cells = [c for buckets in leaderboard["families"].values() for b in buckets for c in b["cells"]]
    assert all(c.get("estimated") is True for c in cells if c["model"] in NEW)
    assert "Estimated scores" in (runs / "n2" / "report.html").read_text(encoding="utf-8")
    manifest = yaml.safe_load((runs / "n2" / "routing_manifest.yaml").read_text(encoding="utf-8"))
    decisions = [manifest["default"], *manifest["families"].values(), *manifest["buckets"].values()]
    for decision in decisions:
        assert decision.get("model") not in NEW
        for candidate in decision.get("candidates") or ():
            assert candidate.get("estimated", False) == (candidate["model"] in NEW)


def test_too_small_a_history_falls_back_to_full_evaluation(
    tmp_path: Path, fake_openai: FakeOpenAIStarter, capsys
) -> None:
    suite = tmp_path / "suite.jsonl"
    key = _suite(suite)
    base = fake_openai(irt_behaviour(key, {**HISTORY, **NEW}))
    runs = tmp_path / "runs"
    few = dict(list(HISTORY.items())[:3])
    common = dict(
        data=[str(suite)], no_judge=True, no_routing=True, cache_dir=str(tmp_path / "c"), history_root=str(runs)
    )
    assert run_pool(RunSpec(pool=str(_pool(tmp_path / "h.yaml", base, few)), out=str(runs / "n1"), **common)).ok
    result = run_pool(
        RunSpec(
            pool=str(_pool(tmp_path / "p.yaml", base, {"newbie": 0.7})), out=str(runs / "n2"), adaptive=True, **common
        )
    )
    assert result.ok
    assert "3 fully evaluated model(s) in the history, 8 needed" in capsys.readouterr().err
    assert not (runs / "n2" / "adaptive.json").exists()
    assert sum(r["model"] == "newbie" for r in score_rows(runs / "n2")) == ITEMS


def test_a_judged_family_is_evaluated_in_full_and_says_why(monkeypatch) -> None:
    """Adaptive selection is judge-free: a family with a bank but judged items (here ``capability``,
    gold type ``reference``) is asked in full beside an adaptive ``exam`` test, and the run says why."""
    rng = np.random.default_rng(0)
    banks = {}
    for family, prefix in (("exam", "e"), ("capability", "r")):
        y = (rng.random((9, 40)) < 0.6).astype(float)
        matrix = FamilyMatrix(family, tuple(HISTORY), tuple(f"{prefix}{j}" for j in range(40)), y)
        banks[family] = fit_bank(matrix)
    monkeypatch.setattr(adaptive_tests, "banks_from_history", lambda root, families, leave_out: (banks, []))
    items = [SimpleNamespace(id=f"e{j}", gold_type="single_choice") for j in range(40)]
    items += [SimpleNamespace(id=f"r{j}", gold_type="reference") for j in range(40)]
    plan = SimpleNamespace(items=items, models=[SimpleNamespace(name=n) for n in [*HISTORY, "newbie"]])
    adaptive = adaptive_tests.adaptive_plan(plan, {"adaptive_budget": 0.1}, Path("."))
    assert {(t.model, t.family) for t in adaptive.tests} == {("newbie", "exam")}
    assert any(n.startswith("capability: judged items; evaluated in full") for n in adaptive.notes)
    plan.units = lambda: iter(SimpleNamespace(model=m.name, item_id=i.id) for m in plan.models for i in plan.items)
    initial = {(u.model, u.item_id) for u in adaptive.initial_units(plan)}
    assert {("newbie", f"r{j}") for j in range(40)} <= initial  # every judged item asked outright
    assert not any(("newbie", f"e{j}") in initial for j in range(40))  # exam items chosen adaptively
