"""The med-agent-verifier README's command shapes in ``python -m pool.run``: comma lists, its track
names, what each filter drops (on stderr), ``--count`` and ``--list [--all]`` — with no server or key."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from eval.loaders import load_demo_suite
from pool.api import count_selection
from pool.items_source import DataError, select_items
from pool.run import main
from pool.run_spec import RunSpec, check_resume, stored_options
from pool.selection import TRACK_ALIASES, split_values
from pool.store.run_store import RunStore
from tests.fake_pool import PoolWriter
from tests.shared_data import need_shared

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
UNSET_KEY = "MEDPOOL_TEST_KEY_NEVER_SET"


@pytest.fixture(scope="module")
def demo():
    return load_demo_suite()


@pytest.fixture
def pool_file(write_pool: PoolWriter) -> Path:
    """A pool whose API needs a key nobody set and whose server nobody runs: --count and --list must not care."""
    os.environ.pop(UNSET_KEY, None)
    return write_pool(
        f"""backends:
  api:
    type: openai
    base_url: http://127.0.0.1:9/v1
    api_key_env: {UNSET_KEY}
  home:
    type: ollama
    base_url: http://127.0.0.1:9
models:
  - name: alpha
    backend: api
  - name: beta
    backend: home
    model: qwen3:8b
    think: off
  - name: gamma
    backend: home
    enabled: false
judge:
  model: alpha
""",
        name="pool.yaml",
    )


def shared_data() -> Path:
    need_shared(SHARED_DATA)
    return SHARED_DATA


# --- comma lists ---------------------------------------------------------------------------------


def test_comma_lists_select_the_union_and_ids_are_repeatable_with_commas(demo):
    both = select_items(demo, {"task": "clinical_reasoning,cloze"})
    assert {i.task for i in both} == {"clinical_reasoning", "cloze"} and len(both) == 10
    assert [i.id for i in select_items(demo, {"task": ["demo/clinical_reasoning", "cloze"]})] == [i.id for i in both]
    ids = [i.id for i in demo.scorable_items if i.track == "exam"][:3]
    chosen = select_items(demo, {"id": [f"{ids[0]},{ids[1]}", ids[2]]})
    assert [i.id for i in chosen] == ids
    systems = {i.domain.split(":")[0] for i in demo.scorable_items if i.domain and i.track != "orchestration"}
    two = sorted(systems)[:2]
    picked = select_items(demo, {"domain": ",".join(two)})
    assert picked and {i.domain.split(":")[0] for i in picked} == set(two)
    assert split_values(" a, b,,a ") == ["a", "b"] and split_values("x,y", known={"x,y"}) == ["x,y"]


def test_a_value_of_a_list_that_matches_nothing_is_a_warning_and_all_of_them_an_error(demo):
    notes: list[str] = []
    items = select_items(demo, {"task": "cloze,clozee"}, notes)
    assert {i.task for i in items} == {"cloze"}
    assert any(n.startswith("warning: --task clozee: matches no item") for n in notes)
    with pytest.raises(DataError, match="--task clozee,nope matches none"):
        select_items(demo, {"task": "clozee,nope"})
    with pytest.raises(DataError, match="names nothing"):
        RunSpec(task=" , ")


# --- the med-agent-verifier README's track names ---------------------------------------------------


def test_track_aliases_select_their_items_and_probes_need_no_orchestration_flag(demo):
    scorable = demo.scorable_items
    book = select_items(demo, {"track": "book"})
    assert book and {(i.track, i.gold_type) for i in book} == {("specialty", "criteria")}
    medbench = select_items(demo, {"track": "medbench"})
    assert medbench and {(i.track, i.gold_type) for i in medbench} == {("capability", "reference")}
    assert sorted(i.id for i in select_items(demo, {"track": "both"})) == sorted(i.id for i in book + medbench)
    probes = select_items(demo, {"track": "probe"})  # no --orchestration, as the README's eval.sh --track probe
    assert [i.id for i in probes] == [i.id for i in scorable if i.gold_type == "probe"]
    tools = select_items(demo, {"track": "tool_decision"})
    assert tools and all(i.gold_type == "tool_decision" for i in tools)
    mixed = select_items(demo, {"track": "exam,probe"})
    assert {i.track for i in mixed} == {"exam", "orchestration"}
    assert set(TRACK_ALIASES) == {"book", "medbench", "both", "probe", "tool_decision"}


def test_an_unknown_track_exits_2_naming_the_valid_ones(pool_file, capsys):
    assert main(["--pool", str(pool_file), "--track", "bok", "--count"]) == 2
    err = capsys.readouterr().err
    assert "--track bok: no such track" in err
    for name in (
        "capability",
        "specialty",
        "orchestration",
        "tcm",
        "exam",
        "book",
        "medbench",
        "both",
        "probe",
        "tool_decision",
    ):
        assert name in err


# --- what each filter drops, on stderr -------------------------------------------------------------


def test_every_filter_that_drops_items_says_how_many_and_why(demo, pool_file, capsys):
    scorable = [i for i in demo.scorable_items if i.track != "orchestration"]
    cardio = [i for i in scorable if i.domain and i.domain.startswith("cardiology:")]
    no_domain = [i for i in scorable if i.domain is None]
    assert main(["--pool", str(pool_file), "--domain", "cardiology", "--limit", "1", "--count"]) == 0
    out, err = capsys.readouterr()
    orchestration = len(demo.scorable_items) - len(scorable)
    assert (
        f"selection: without --orchestration: kept {len(scorable)} of {len(demo.scorable_items)} item(s); "
        f"dropped {orchestration} orchestration-track item(s)"
    ) in err
    assert f"selection: --domain cardiology: kept {len(cardio)} of {len(scorable)} item(s)" in err
    assert f"{len(no_domain)} with no domain (" in err and "which --domain never selects" in err
    assert f"selection: --limit 1: kept 1 of {len(cardio)} item(s)" in err
    assert out.startswith("1 item(s) × 2 model(s) = 2 unit(s)")


def test_sample_with_subset_warns_that_both_apply_and_in_which_order(demo, tmp_path):
    ids = [i.id for i in demo.scorable_items if i.track == "exam"][::2]
    ids_file = tmp_path / "ids.txt"
    ids_file.write_text("\n".join(ids) + "\n", encoding="utf-8")
    notes: list[str] = []
    subset = select_items(demo, {"subset": str(ids_file)})
    both = select_items(demo, {"subset": str(ids_file), "sample": 1}, notes)
    first_per_bucket: dict[tuple[str, str | None], str] = {}
    for item in subset:
        first_per_bucket.setdefault((item.task, item.domain), item.id)
    assert len(first_per_bucket) < len(subset)  # --sample has something to drop
    assert [i.id for i in both] == list(first_per_bucket.values())  # the subset first, then --sample of it
    assert (
        f"warning: --subset {ids_file} with --sample 1: both apply, the subset first, then the first 1 per "
        "(task, domain) of the subset" in notes
    )


# --- --count and --list ------------------------------------------------------------------------------


def test_count_prints_items_and_units_per_track_and_task_without_a_server_or_key(pool_file, capsys):
    assert main(["--pool", str(pool_file), "--track", "both", "--count"]) == 0
    out = capsys.readouterr().out
    view = count_selection(RunSpec(pool=str(pool_file), track="both"))
    assert view["models"] == ["alpha", "beta"] and view["units"] == 2 * view["items"]
    assert set(view["by_track"]) == {"capability", "specialty"}
    assert out.splitlines()[0] == (
        f"{view['items']} item(s) × 2 model(s) = {view['units']} unit(s)  (models: alpha, beta)"
    )
    for track, entry in view["by_track"].items():
        assert any(line.split() == [track, str(entry["items"]), str(entry["units"])] for line in out.splitlines())
    assert main(["--pool", str(pool_file), "--all", "--count"]) == 0
    assert "× 3 model(s)" in capsys.readouterr().out


def test_list_prints_the_roster_and_the_judge_and_all_adds_disabled_models(pool_file, capsys):
    assert main(["--pool", str(pool_file), "--list"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:] if line.startswith("  ")}
    assert rows["alpha"] == ["alpha", "alpha", "api", "(openai)", "yes", "-"]
    assert rows["beta"] == ["beta", "qwen3:8b", "home", "(ollama)", "yes", "off"]
    assert "gamma" not in rows and "1 disabled model(s) not listed; `--list --all` shows them" in out
    assert "judge: alpha (a pool model; backend api (openai)" in out
    assert main(["--pool", str(pool_file), "--list", "--all"]) == 0
    out = capsys.readouterr().out
    assert "gamma" in out and "disabled model(s) not listed" not in out
    assert any(line.split()[:1] == ["gamma"] and line.split()[-2:] == ["no", "default"] for line in out.splitlines())
    assert main(["--pool", str(pool_file), "--list", "--dry-run"]) == 2
    assert "use one" in capsys.readouterr().err


# --- stored options: runs stored with a plain string still resume ----------------------------------


def test_a_run_stored_with_plain_strings_still_loads_and_resumes_with_the_same_names(demo, tmp_path):
    run_dir = tmp_path / "old-run"
    options = {**RunSpec().new_run_options()[0], "task": "cloze", "domain": None, "track": "exam"}
    with RunStore(run_dir) as store:
        store.begin_run("old-run", pool_fingerprint="p", data_fingerprint="d", options=options)
    stored = stored_options(run_dir)
    assert stored["task"] == "cloze" and stored["track"] == "exam"
    check_resume(RunSpec(task="cloze", track=["exam"]), stored)  # the same selection, any spelling
    with pytest.raises(DataError, match="--task 'cloze,true_false' with --resume"):
        check_resume(RunSpec(task="cloze, true_false"), stored)
    assert {i.task for i in select_items(demo, stored)} == {"cloze"}
    assert RunSpec(task=["cloze", "true_false"]).new_run_options()[0]["task"] == "cloze,true_false"


# --- the README's commands against the reference suites --------------------------------------------


def test_the_readme_commands_size_the_reference_suites(pool_file, capsys):
    data = str(shared_data())
    argv = ["--pool", str(pool_file), "--data", data, "--models", "alpha", "--count"]
    assert (
        main([*argv, "--track", "medbench", "--task", "MedShield,MedCallAPI,MedDBOps,MedPathPlan", "--sample", "1"])
        == 0
    )
    out, err = capsys.readouterr()
    assert out.startswith("4 item(s) × 1 model(s) = 4 unit(s)")
    assert "selection: --task MedShield,MedCallAPI,MedDBOps,MedPathPlan: kept 120 of 330 item(s)" in err
    assert main([*argv, "--domain", "cardiology"]) == 0
    err = capsys.readouterr().err
    assert "330 reference" not in err and "with no domain (capability 330" in err
