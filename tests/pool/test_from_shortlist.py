"""``python -m pool.run --from-shortlist``: exactly the shortlist's must-test models run (with ``--tier optional``
the optional ones too), and a shortlisted model the pool lacks is a warning on stderr, not a failure.
The shortlist comes from ``python -m routing.screen`` on the hand-written evidence of tests/data/screen;
the models are FAKE (one fake OpenAI server answering "A")."""

from __future__ import annotations

import json
from pathlib import Path

from routing.screen.__main__ import main as screen_main
from tests.fake_pool import pool_run_cli, two_option_items, write_jsonl
from tests.fakes import ok

EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "screen" / "evidence"
# screened for cardiology / specialty: qwen2.5-7b-instruct 0.898 and llama3-8b-q4 0.738 must-test,
# smollm2-135m 0.4 (the prior) optional, mistral-nemo 0.0735 skip (tests/routing/test_screen.py)
SCREENED = "qwen2.5-7b-instruct,llama3-8b-q4,smollm2-135m,mistral-nemo"
IN_POOL = ("qwen2.5-7b-instruct", "smollm2-135m", "mistral-nemo", "other")  # llama3-8b-q4 is not
ITEMS = two_option_items(3)


def _shortlist(tmp_path: Path) -> Path:
    out = tmp_path / "screen"
    assert (
        screen_main(
            ["--evidence", str(EVIDENCE), "--models", SCREENED, "--domain", "cardiology"]
            + ["--axis", "specialty", "--out", str(out)]
        )
        == 0
    )
    return out / "shortlist.yaml"


def _pool(write_pool, url: str) -> Path:
    models = "\n".join(f"  - {{name: {name}, backend: fake, max_tokens: 4}}" for name in IN_POOL)
    return write_pool(f"backends:\n  fake: {{type: openai, base_url: '{url}'}}\nmodels:\n{models}\n")


def test_count_names_exactly_the_must_test_models_and_warns_for_a_missing_one(tmp_path: Path, write_pool) -> None:
    shortlist, pool = _shortlist(tmp_path), _pool(write_pool, "http://127.0.0.1:9/v1")
    data = write_jsonl(tmp_path / "items.jsonl", ITEMS)
    args = ("--pool", str(pool), "--data", str(data), "--from-shortlist", str(shortlist), "--count")
    must = pool_run_cli(*args, cache=tmp_path / "cache")
    assert must.returncode == 0, must.stderr
    assert "(models: qwen2.5-7b-instruct)" in must.stdout
    assert "shortlisted model 'llama3-8b-q4'" in must.stderr and "not in the pool" in must.stderr
    optional = pool_run_cli(*args, "--tier", "optional", cache=tmp_path / "cache")
    assert optional.returncode == 0, optional.stderr
    assert "(models: qwen2.5-7b-instruct, smollm2-135m)" in optional.stdout  # pool order; mistral-nemo skipped


def test_a_run_answers_with_the_must_test_models_only(tmp_path: Path, write_pool, fake_openai) -> None:
    shortlist, pool = _shortlist(tmp_path), _pool(write_pool, fake_openai(lambda index, payload: ok("A")))
    data = write_jsonl(tmp_path / "items.jsonl", ITEMS)
    run = tmp_path / "run"
    done = pool_run_cli(
        "--pool",
        str(pool),
        "--data",
        str(data),
        "--from-shortlist",
        str(shortlist),
        "--out",
        str(run),
        "--no-routing",
        "--no-judge",
        cache=tmp_path / "cache",
    )
    assert done.returncode == 0, done.stderr
    answered = {json.loads(line)["model"] for line in (run / "results.jsonl").read_text(encoding="utf-8").splitlines()}
    assert answered == {"qwen2.5-7b-instruct"}


def test_bad_combinations_and_files_exit_2(tmp_path: Path, write_pool) -> None:
    shortlist, pool = _shortlist(tmp_path), _pool(write_pool, "http://127.0.0.1:9/v1")
    both = pool_run_cli(
        "--pool",
        str(pool),
        "--from-shortlist",
        str(shortlist),
        "--models",
        "other",
        "--count",
        cache=tmp_path / "cache",
    )
    assert both.returncode == 2 and "--from-shortlist with --models" in both.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: something-else\n", encoding="utf-8")
    wrong = pool_run_cli("--pool", str(pool), "--from-shortlist", str(bad), "--count", cache=tmp_path / "cache")
    assert wrong.returncode == 2 and "bad.yaml: kind: not a medpool-shortlist file" in wrong.stderr
    empty = write_pool(
        "backends:\n  fake: {type: openai, base_url: 'http://127.0.0.1:9/v1'}\n"
        "models:\n  - {name: other, backend: fake}\n",
        name="other.yaml",
    )
    none = pool_run_cli("--pool", str(empty), "--from-shortlist", str(shortlist), "--count", cache=tmp_path / "cache")
    assert none.returncode == 2 and "none of its must-test models is in the pool" in none.stderr
