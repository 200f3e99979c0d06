"""A run's files say which shape they have and which medpool wrote them; files written before versions
existed still load; the package has one version, printed by ``python -m pool.run --version``.

FAKE models answer; nothing here needs a real server.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import pytest

import pool
from pool import RunSpec, run_pool
from pool.api import EXIT_OK
from pool.store.export import SCHEMA_VERSIONS
from routing.build import build
from routing.nights.history import read_summary_json, snapshot
from tests.fake_pool import FakeOpenAIStarter, PoolWriter, two_option_items
from tests.fakes import ok

REPO = Path(__file__).resolve().parents[2]
ITEMS = two_option_items(6)


@pytest.fixture
def finished_run(tmp_path: Path, fake_openai: FakeOpenAIStarter, write_pool: PoolWriter) -> Path:
    url = fake_openai(lambda index, payload: ok("A" if payload["model"] == "a" else "B"))
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in ITEMS), encoding="utf-8")
    pool_file = write_pool(
        f'backends:\n  fake: {{type: openai, base_url: "{url}"}}\nmodels:\n'
        "  - {name: a, backend: fake, max_tokens: 8}\n  - {name: b, backend: fake, max_tokens: 8}\n",
        name="pool.yaml",
    )
    result = run_pool(
        RunSpec(pool=pool_file, data=[data], out=tmp_path / "runs" / "r1", no_cache=True, no_routing=True)
    )
    assert result.exit_code == EXIT_OK
    return result.run_dir


def test_summary_names_the_schemas_and_the_version_that_wrote_it(finished_run: Path) -> None:
    summary = json.loads((finished_run / "summary.json").read_text(encoding="utf-8"))
    assert summary["schema_version"] == 1
    assert summary["schemas"] == SCHEMA_VERSIONS == {"results.jsonl": 1, "scores.jsonl": 1, "summary.json": 1}
    assert summary["medpool_version"] == pool.__version__


def test_files_written_before_versions_existed_still_load(finished_run: Path) -> None:
    path = finished_run / "summary.json"
    old = json.loads(path.read_text(encoding="utf-8"))
    for key in ("schema_version", "schemas", "medpool_version"):
        del old[key]
    path.write_text(json.dumps(old, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    assert read_summary_json(finished_run)["run_id"] == old["run_id"]
    assert snapshot(finished_run.parent, finished_run).run_id == old["run_id"]
    built = build([finished_run])  # the aggregation reads scores.jsonl / its columns and summary.json as they are
    assert (finished_run / "routing_manifest.yaml").is_file() and built


def test_one_version_everywhere() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "pool.run", "--version"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert shown == f"medpool {pool.__version__}"
    assert importlib.metadata.version("medpool") == pool.__version__  # pyproject reads pool/version.py
    changelog = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## [{pool.__version__}]" in changelog and "## [Unreleased]" in changelog
