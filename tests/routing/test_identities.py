"""Full model and judge identities: what scores.jsonl carries, and that routing.build never merges two.

Judges here come from real pool files through ``pool.score.identity.JudgeSetup`` and models through
``pool.score.identity.model_identity``, so the rows are the ones a run writes; old rows (no full identity,
no ``answer_status``) still load, as what they carry.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from eval.items.scores import JudgeIdentity, Score
from pool.config import parse_pool
from pool.score.identity import JudgeSetup, configured_endpoint, model_identity
from routing.boards.leaderboard import build_buckets
from routing.build import BuildOptions, build, main
from routing.load.runs import load_runs
from routing.load.table import common_items
from tests.routing.run_fixtures import JUDGE, identity, row, write_run

FAST = BuildOptions(bootstrap=200, bt_rounds=20, elo_rounds=10)
DEEPSEEK = "https://api.deepseek.com/v1"


def pool_text(judge: str = "", models: str = "", url: str = DEEPSEEK) -> str:
    return f"""backends:
  api:
    type: openai
    base_url: {url}
  local:
    type: llamacpp
    engine: llama_cpp
models:
  - name: m
    backend: api
    model: m-chat
{models}judge:
  backend: api
  model: deepseek-chat
{judge}"""


def judge_of(text: str) -> JudgeSetup:
    config = parse_pool(text)
    judge = config.judge_model()
    assert judge is not None
    return JudgeSetup(
        judge, judge.backend, configured_endpoint(config, judge), backend_type=config.backends[judge.backend].type
    )


JUDGES = {
    "base": pool_text(),
    "reasoner": pool_text().replace("model: deepseek-chat", "model: deepseek-reasoner"),
    "hot": pool_text(judge="  temperature: 1.0\n"),
    "elsewhere": pool_text(url="https://proxy.example.org/v1"),
}


# Every field that shapes an answer, which a model's identity and a judge's identity both hold.
ANSWER_FIELDS = {
    "name",
    "backend",
    "backend_type",
    "endpoint",
    "model",
    "temperature",
    "max_tokens",
    "stop",
    "top_p",
    "seed",
    "mode",
    "think",
    "gguf",
    "chat_format",
}


def judge_record(variant: str) -> dict[str, Any]:
    return judge_of(JUDGES[variant]).identity(None, contract="reference").to_record()  # type: ignore[arg-type]


def test_judge_identity_holds_every_field_and_the_key_is_short_and_stable() -> None:
    record = judge_record("base")
    full = record["identity"]
    assert ANSWER_FIELDS | {"prompt_version"} <= set(full)
    assert (full["name"], full["backend"], full["backend_type"], full["endpoint"], full["model"]) == (
        "judge",
        "api",
        "openai",
        DEEPSEEK,
        "deepseek-chat",
    )
    assert full["prompt_version"] == record["prompt_version"] and record["model"] == "judge"
    assert record["key"].startswith("judge@api#") and len(record["key"]) == len("judge@api#") + 12
    assert (
        JudgeIdentity.from_record(json.loads(json.dumps(record))).key() == record["key"] == judge_record("base")["key"]
    )


def test_judges_differing_in_model_id_temperature_or_endpoint_have_distinct_keys_and_stages() -> None:
    keys = {variant: judge_record(variant)["key"] for variant in JUDGES}
    assert len(set(keys.values())) == len(JUDGES), keys
    stages = {judge_of(text).stage(None, contract="reference") for text in JUDGES.values()}  # type: ignore[arg-type]
    assert len(stages) == len(JUDGES)


def test_legacy_judge_rows_keep_their_key() -> None:
    legacy = JudgeIdentity.from_record(JUDGE)
    assert legacy.key() == "judge-qwen@llamacpp#a1b2c3d4" and legacy.setup == ()
    assert legacy.to_record()["identity"] == {"name": "judge-qwen", "backend": "llamacpp", "prompt_version": "a1b2c3d4"}
    with pytest.raises(ValueError, match="prompt_version"):
        JudgeIdentity.of("j", "b", "v", {"prompt_version": "other"})


MODEL_VARIANTS = {
    "base": "",
    "seed": "    seed: 7\n",
    "top_p": "    top_p: 0.9\n",
    "stop": "    stop: ['###']\n",
}


def identity_of(extra: str) -> dict[str, Any]:
    config = parse_pool(pool_text(models=extra))
    return model_identity(config, config.model("m"))


def test_model_identity_holds_every_field_that_shapes_an_answer() -> None:
    ident = identity_of("")
    assert ANSWER_FIELDS <= set(ident)
    assert "enabled" not in ident and "notes" not in ident
    assert ident["endpoint"] == DEEPSEEK and ident["model"] == "m-chat"
    config = parse_pool(pool_text())
    served = model_identity(config, config.model("m"), "https://API.deepseek.com/v1/")
    assert served["endpoint"] == DEEPSEEK  # the answering server's identity, normalised
    assert len({json.dumps(identity_of(extra), sort_keys=True) for extra in MODEL_VARIANTS.values()}) == len(
        MODEL_VARIANTS
    )


def test_local_models_differing_in_gguf_or_chat_format_are_different_identities() -> None:
    local = """  - name: tiny
    backend: local
    gguf: {gguf}
    chat_format: {fmt}
"""
    idents = []
    for gguf, fmt in (
        ("/nonexistent/a.gguf", "chatml"),
        ("/nonexistent/b.gguf", "chatml"),
        ("/nonexistent/a.gguf", "llama-2"),
    ):
        config = parse_pool(pool_text(models=local.format(gguf=gguf, fmt=fmt)))
        idents.append(model_identity(config, config.model("tiny"), f"llamacpp://{gguf[-6]}sha/{fmt}"))
    assert len({json.dumps(i, sort_keys=True) for i in idents}) == 3
    assert idents[0]["gguf"] == "/nonexistent/a.gguf" and idents[2]["chat_format"] == "llama-2"


def runs_by_judge(tmp_path: Path) -> list[Path]:
    """One run per judge variant, the same model and items, a different score each (0.9, 0.7, ...)."""
    runs = []
    for day, (variant, value) in enumerate(zip(JUDGES, (0.9, 0.7, 0.5, 0.3), strict=True)):
        rows = [row("m", f"q{i}", "MedCOT", "reference", value, judge=judge_record(variant)) for i in range(6)]
        runs.append(write_run(tmp_path / variant, rows, run_id=variant, created_at=f"2026-11-2{day}T00:00:00Z"))
    return runs


def test_runs_judged_differently_are_never_averaged_into_one_cell(tmp_path: Path) -> None:
    runs = runs_by_judge(tmp_path)
    loaded = load_runs(runs)
    (bucket,) = [b for b in build_buckets(loaded.table, rounds=100) if b.name == "MedCOT" and b.kind == "task"]
    cells = {c.entrant.judge_key: (c.n, round(c.stats["score"].value, 6)) for c in bucket.cells}
    expected = {judge_record(v)["key"]: (6, value) for v, value in zip(JUDGES, (0.9, 0.7, 0.5, 0.3), strict=True)}
    assert cells == expected
    assert len({c.entrant.label for c in bucket.cells}) == 4 and loaded.superseded == 0
    (apart,) = loaded.kept_apart
    assert (apart["kind"], apart["family"], apart["name"]) == ("judge", "capability", "judge")
    assert set(apart["differs_in"]) == {"endpoint", "model", "temperature"}
    assert sorted(r for i in apart["identities"] for r in i["runs"]) == sorted(JUDGES)

    build(runs, tmp_path / "out", FAST)
    manifest = yaml.safe_load((tmp_path / "out" / "routing_manifest.yaml").read_text(encoding="utf-8"))
    assert manifest["kept_apart"] == json.loads(json.dumps(list(loaded.kept_apart)))
    assert len(manifest["models"]["m"]["judges"]) == 4


def test_the_same_full_judge_identity_is_still_superseded_by_the_later_run(tmp_path: Path) -> None:
    early = write_run(
        tmp_path / "r1",
        [row("m", f"q{i}", "MedCOT", "reference", 0.9, judge=judge_record("base")) for i in range(6)],
        run_id="r1",
        created_at="2026-11-20T00:00:00Z",
    )
    late = write_run(
        tmp_path / "r2",
        [row("m", f"q{i}", "MedCOT", "reference", 0.5, judge=judge_record("base")) for i in range(6)],
        run_id="r2",
        created_at="2026-11-21T00:00:00Z",
    )
    loaded = load_runs([early, late])
    assert loaded.superseded == 6 and loaded.kept_apart == ()
    assert len(loaded.table.entrants) == 1 and set(loaded.table.value) == {0.5}


def test_model_identities_differing_in_seed_top_p_or_gguf_are_never_merged(tmp_path: Path) -> None:
    variants = {"base": {}, "seed": {"seed": 7}, "top_p": {"top_p": 0.9}, "gguf": {"gguf": "other.gguf"}}
    runs = []
    for day, ((variant, extra), value) in enumerate(zip(variants.items(), (1.0, 0.0, 1.0, 0.0), strict=True)):
        ident = identity("m", **{"seed": None, "top_p": None, "gguf": "m.gguf", **extra})
        rows = [row(ident, f"q{i}", "single_choice", "single_choice", value) for i in range(6)]
        runs.append(write_run(tmp_path / variant, rows, run_id=variant, created_at=f"2026-11-2{day}T00:00:00Z"))
    loaded = load_runs(runs)
    (bucket,) = [b for b in build_buckets(loaded.table, rounds=100) if b.kind == "task"]
    assert sorted((c.entrant.label, c.n) for c in bucket.cells) == sorted(
        [
            ("m [gguf=m.gguf, seed=None, top_p=None]", 6),
            ("m [gguf=m.gguf, seed=7, top_p=None]", 6),
            ("m [gguf=m.gguf, seed=None, top_p=0.9]", 6),
            ("m [gguf=other.gguf, seed=None, top_p=None]", 6),
        ]
    )
    (apart,) = loaded.kept_apart
    assert apart["kind"] == "model" and apart["differs_in"] == ["gguf", "seed", "top_p"]
    assert sorted(r for i in apart["identities"] for r in i["runs"]) == sorted(variants)


def test_a_list_valued_identity_field_loads_and_tells_models_apart(tmp_path: Path) -> None:
    rows = [
        row(identity("m", stop=stop), f"q{i}", "single_choice", "single_choice", 1.0)
        for stop in ([], ["###"])
        for i in range(3)
    ]
    loaded = load_runs([write_run(tmp_path / "run", rows)])
    assert sorted(e.label for e in loaded.table.entrants) == ['m [stop=["###"]]', "m [stop=[]]"]


def test_old_rows_without_full_identities_still_load_and_stay_apart_from_new_ones(tmp_path: Path) -> None:
    old = write_run(
        tmp_path / "old",
        [row("m", f"q{i}", "MedCOT", "reference", 0.8, judge=JUDGE) for i in range(6)],
        run_id="old",
        created_at="2026-11-01T00:00:00Z",
    )
    new_ident = {**identity("m"), "endpoint": DEEPSEEK, "seed": None}
    new_judge = {
        **JUDGE,
        "identity": {
            "name": "judge-qwen",
            "backend": "llamacpp",
            "prompt_version": "a1b2c3d4",
            "model": "qwen.gguf",
            "endpoint": "llamacpp://x/y",
        },
    }
    new = write_run(
        tmp_path / "new",
        [row(new_ident, f"q{i}", "MedCOT", "reference", 0.4, judge=new_judge) for i in range(6)],
        run_id="new",
        created_at="2026-11-02T00:00:00Z",
    )
    loaded = load_runs([old, new])
    assert loaded.superseded == 0 and len(loaded.table.entrants) == 2
    kinds = sorted(a["kind"] for a in loaded.kept_apart)
    assert kinds == ["judge", "model"]
    keys = {e.judge_key for e in loaded.table.entrants}
    assert "judge-qwen@llamacpp#a1b2c3d4" in keys and len(keys) == 2


def test_a_judge_identity_that_contradicts_its_row_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = {**JUDGE, "identity": {"name": "someone-else", "backend": "llamacpp"}}
    run = write_run(tmp_path / "run", [row("m", "q0", "MedCOT", "reference", 0.5, judge=bad)])
    assert main(["--run", str(run)]) == 2
    assert (
        "scores.jsonl:1: judge.identity.name: 'someone-else' differs from judge.model 'judge-qwen'"
        in capsys.readouterr().err
    )


def test_score_record_carries_the_key_and_the_full_identity() -> None:
    judge = JudgeIdentity.from_record(judge_record("hot"))
    record = Score("scored", 0.5, True, judge=judge).to_record()["judge"]
    assert record == judge_record("hot") and record["identity"]["temperature"] == 1.0


# --common with a model given up on ------------------------------------------------------------


def failed(model: str, item: str, task: str = "single_choice") -> dict[str, Any]:
    """An answer never obtained: the model was marked failed (what pool.score.stage writes)."""
    return {
        **row(
            model,
            item,
            task,
            "single_choice",
            None,
            status="infra_error",
            details={"reason": "no answer was obtained (infra_error)"},
        ),
        "answer_status": "infra_error",
    }


def test_common_keeps_a_task_when_one_model_was_given_up_on(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        row(m, f"q{i}", "single_choice", "single_choice", v, passed=v >= 0.5)
        for m, v in (("a", 1.0), ("b", 0.0))
        for i in range(8)
    ]
    rows += [failed("dead", f"q{i}") for i in range(8)]
    rows = [r for r in rows if not (r["model"] == "b" and r["item_id"].endswith("/q7"))]
    rows.append(failed("b", "q7"))  # one answer b never got: q7 is not common
    run = write_run(tmp_path / "run", rows)
    table = load_runs([run]).table
    keep, left_out = common_items(table)
    kept = {table.items[i].rsplit("/", 1)[1] for i in table.item[keep & (table.status == 0)]}
    assert kept == {f"q{i}" for i in range(7)}
    assert left_out == [
        {
            "family": "exam",
            "task": "single_choice",
            "model": "dead",
            "reason": "no answer obtained (every answer an infra_error, e.g. model_failed)",
        }
    ]
    (bucket,) = [b for b in build_buckets(table, keep, rounds=100) if b.kind == "task"]
    assert {c.entrant.label: c.n for c in bucket.cells if c.n} == {"a": 7, "b": 7}

    assert main(["--run", str(run), "--common", "--bootstrap", "100", "--bt-rounds", "10", "--elo-rounds", "5"]) == 0
    assert "--common: dead left out of exam/single_choice: no answer obtained" in capsys.readouterr().out
    manifest = yaml.safe_load((run / "routing_manifest.yaml").read_text(encoding="utf-8"))
    assert manifest["common_left_out"] == left_out
    assert manifest["buckets"]["exam/task/single_choice"]["routable"]


def test_common_treats_a_judge_failure_as_answered_but_unscored(tmp_path: Path) -> None:
    rows = [row(m, f"q{i}", "MedCOT", "reference", 0.9, judge=JUDGE) for m in ("a", "b") for i in range(6)]
    rows += [
        {**row("c", f"q{i}", "MedCOT", "reference", None, status="infra_error", judge=JUDGE), "answer_status": "ok"}
        for i in range(6)
    ]
    table = load_runs([write_run(tmp_path / "run", rows)]).table
    keep, left_out = common_items(table)
    assert [g["reason"] for g in left_out] == ["no scored item (answers obtained, none scored)"]
    assert int((keep & (table.status == 0)).sum()) == 12
