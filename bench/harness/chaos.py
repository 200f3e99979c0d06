"""Kill ``pool.run`` in every phase, resume, and compare with an uninterrupted run.

Shared by the short test (``tests/pool/test_chaos.py``) and the long benchmark (``python -m bench.chaos``).
The pool is the FAKE chaos server (``tests/fakes/chaos_server.py``: good, weak and hostile models,
a judge, injected faults) plus a dead endpoint nobody listens on. Phases are read off the run
store while the run goes: ``answering`` (answer rows still missing), ``reasking`` (short answers asked
once more, ``reask_short_answers: true``), ``judging`` (verdict rows being written), ``hallu`` (claim-check
rows being written), ``pairwise`` (with ``--pairwise``: the ties' side-by-side verdicts being written
to ``RUN_DIR/pairwise/``) and ``routing`` (``scores.jsonl`` written, manifest not yet). Each kill waits
for its phase, then a random 0–``jitter_s`` more.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from runners.llamacpp.server import free_loopback_port

REPO = Path(__file__).resolve().parents[2]
PHASES = ("answering", "reasking", "judging", "hallu", "pairwise", "routing")
# Phases too brief for a random wait: the kill lands as soon as the phase is seen.
BRIEF_PHASES = ("reasking", "routing")
# Phases whose few rows are done by the first resume after a kill: a second kill would find them gone.
ONCE_PHASES = ("reasking",)
# Fields that record how a row was obtained (timing, retries, cache), not what it says.
VOLATILE_RESULT_FIELDS = ("attempts", "retries", "latency_s", "cached", "extra")
VOLATILE_SCORE_FIELDS = ("latency_s",)


@dataclass
class KillReport:
    kills: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PHASES + ("sigterm",), 0))
    missed: int = 0  # the run finished before the chosen phase came round
    exit_codes: list[int] = field(default_factory=list)


free_port = free_loopback_port


def start_fake(workdir: Path, fault_rate: float) -> tuple[subprocess.Popen, str]:
    port_file = workdir / f"fake-{fault_rate}.port"
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.chaos_server", str(port_file), "--fault-rate", str(fault_rate)], cwd=REPO
    )
    deadline = time.monotonic() + 30
    while not port_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("chaos fake did not start")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port_file.read_text()}/v1"


def write_suite(path: Path, n_items: int) -> Path:
    """Reference, criteria and single-choice items in equal parts (all synthetic)."""
    rows = []
    for i in range(n_items):
        kind = i % 3
        base = {
            "id": f"x{i:03d}",
            "task": ["qa", "consult", "mcq"][kind],
            "track": "capability",
            "domain": ["cardiology:htn", "endocrine:dm", "cardiology:af"][i % 3 if kind else 0],
        }
        if kind == 0:
            rows.append(
                {
                    **base,
                    "gold_type": "reference",
                    "question": f"问题 {i}：高血压的诊断标准？",
                    "gold": "诊室血压≥140/90 mmHg。",
                }
            )
        elif kind == 1:
            rows.append(
                {
                    **base,
                    "gold_type": "criteria",
                    "track": "specialty",
                    "question": f"病例 {i}：头痛伴血压升高怎么办？",
                    "gold": {"expected_topics": ["测量血压"], "must_warn": ["就医"], "must_not": ["自行停药"]},
                }
            )
        else:
            rows.append(
                {
                    **base,
                    "gold_type": "single_choice",
                    "track": "exam",
                    "question": f"题 {i}：选哪个？",
                    "options": {"A": "甲", "B": "乙"},
                    "gold": "A",
                }
            )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


JUDGES = ("judge",)
PANEL = ("judge", "strict-judge", "lenient-judge")  # ``panel=True``: three judges of known, differing behaviour


def write_pool(path: Path, base_url: str, dead_port: int, *, panel: bool = False) -> Path:
    """The chaos pool; ``panel``: a ``judges:`` panel of three fake judges (majority rule) instead of one judge."""
    judges = (
        """  - name: strict-judge
    backend: fake
    model: judge-model-strict
    enabled: false
  - name: lenient-judge
    backend: fake
    model: judge-model-lenient
    enabled: false
judges:
  - model: judge
  - model: strict-judge
  - model: lenient-judge
"""
        if panel
        else """judge:
  model: judge
"""
    )
    path.write_text(
        f"""backends:
  fake:
    type: openai
    base_url: {base_url}
    max_concurrency: 4
    max_retries: 4
    timeout_s: 10
  dead:
    type: openai
    base_url: http://127.0.0.1:{dead_port}/v1
    max_retries: 0
    timeout_s: 2
defaults:
  max_tokens: 256
reask_short_answers: true  # the fakes' criteria answers are short: each is asked once more
models:
  - name: good
    backend: fake
    model: good-model
  - name: weak
    backend: fake
    model: weak-model
  - name: hostile
    backend: fake
    model: hostile-model
  - name: gone
    backend: dead
    model: dead-model
  - name: judge
    backend: fake
    model: judge-model
    enabled: false
{judges}""",
        encoding="utf-8",
    )
    return path


def cli(args: list[str], cache_dir: Path) -> subprocess.Popen:
    env = {**os.environ, "MEDPOOL_CACHE_DIR": str(cache_dir)}
    return subprocess.Popen(
        [sys.executable, "-m", "pool.run", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def phase_of(run_dir: Path, started: float) -> str | None:
    """The phase this process has been seen working in (None: no sign of it yet).

    Evidence must come from the process started at ``started`` itself — a row it recorded, or
    ``scores.jsonl`` it wrote — never from the store a previous process left behind.
    """
    since = datetime.fromtimestamp(started, UTC).isoformat(timespec="milliseconds")
    scores = run_dir / "scores.jsonl"
    if scores.exists() and scores.stat().st_mtime >= started:
        manifest = run_dir / "routing_manifest.yaml"
        if manifest.exists() and manifest.stat().st_mtime >= started:
            return None
        judged = run_dir / "pairwise_judged.json"
        stage_done = judged.exists() and judged.stat().st_mtime >= started
        if not stage_done and _latest_stage(run_dir / "pairwise" / "run.sqlite", since) is not None:
            return "pairwise"
        return "routing"
    stage = _latest_stage(run_dir / "run.sqlite", since)
    if stage is None:
        return None
    if stage in ("answer", "answer:reask"):
        return "answering" if stage == "answer" else "reasking"
    return "hallu" if ":hallu" in stage else "judging"


def _latest_stage(store: Path, since: str) -> str | None:
    """The stage of the latest result row a run store recorded since ``since`` (None: none, or no store)."""
    if not store.exists():
        return None
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=1) as conn:
            row = conn.execute(
                "SELECT stage FROM results WHERE finished_at >= ? ORDER BY finished_at DESC LIMIT 1", (since,)
            ).fetchone()
    except sqlite3.Error:
        return None
    return None if row is None else str(row[0])


def kill_in_phase(
    proc: subprocess.Popen,
    run_dir: Path,
    phase: str,
    started: float,
    rng: random.Random,
    jitter_s: float,
    sig: int = signal.SIGKILL,
) -> bool:
    """Wait for ``phase``, then a random moment more, then signal; False if the run ended first."""
    while proc.poll() is None:
        if phase_of(run_dir, started) == phase:
            time.sleep(rng.uniform(0, jitter_s) if phase not in BRIEF_PHASES else 0)
            if proc.poll() is not None:
                return False
            proc.send_signal(sig)
            proc.wait(60)
            return True
        time.sleep(0.005)
    return False


def _ended_before_the_signal(phase: str, code: int, stderr: str, run_dir: Path, started: float) -> bool:
    """A run whose answers ended in infra errors builds no routing files, so its "routing" phase is
    its last moments: a SIGTERM may land after its summary is written, while the interpreter shuts
    down and no handler runs any more. That run ended on its own (exit 1, its summary written, no
    interruption said), which is a missed signal, not an ignored one."""
    summary = run_dir / "summary.json"
    return (
        phase == "routing"
        and code == 1
        and "interrupted" not in stderr
        and summary.exists()
        and summary.stat().st_mtime >= started
    )


def run_with_kills(
    args: list[str],
    run_dir: Path,
    cache_dir: Path,
    kills_per_phase: int,
    seed: int,
    jitter_s: float = 0.1,
    sigterms: int = 1,
    phases: tuple[str, ...] = PHASES,
) -> KillReport:
    """Start, SIGKILL ``kills_per_phase`` times in each of ``phases`` (and SIGTERM ``sigterms`` times
    while answering and while building the routing artefacts), then resume to the end."""
    rng = random.Random(seed)
    report = KillReport()
    schedule = []
    for phase in phases:  # SIGTERMs (exit 130, then resume) in the first and the last phase
        schedule += [(phase, signal.SIGKILL)] * (min(kills_per_phase, 1) if phase in ONCE_PHASES else kills_per_phase)
        if phase in (PHASES[0], PHASES[-1]):
            schedule += [(phase, signal.SIGTERM)] * sigterms
    first = True
    for phase, sig in schedule:
        started = time.time() - 0.001
        proc = cli(args if first else ["--resume", str(run_dir)], cache_dir)
        first = False
        if kill_in_phase(proc, run_dir, phase, started, rng, jitter_s, sig):
            code = proc.returncode
            report.exit_codes.append(code)
            if sig == signal.SIGTERM:
                stderr = proc.stderr.read()
                if code != 130 and _ended_before_the_signal(phase, code, stderr, run_dir, started):
                    report.missed += 1  # the run had finished: the signal reached an interpreter shutting down
                    proc.stderr.close()
                    continue
                report.kills["sigterm"] += 1
                if code != 130:
                    raise AssertionError(f"SIGTERM in {phase}: exit {code}, expected 130: {stderr}")
            else:
                report.kills[phase] += 1
        else:
            report.missed += 1
            proc.wait(120)
            report.exit_codes.append(proc.returncode)
        proc.stderr.close()
    final = cli(["--resume", str(run_dir)], cache_dir)
    _, err = final.communicate(timeout=600)
    report.exit_codes.append(final.returncode)
    if final.returncode not in (0, 1):
        raise AssertionError(f"final resume exit {final.returncode}: {err}")
    return report


def run_clean(args: list[str], cache_dir: Path) -> int:
    proc = cli(args, cache_dir)
    _, err = proc.communicate(timeout=600)
    if proc.returncode not in (0, 1):
        raise AssertionError(f"clean run exit {proc.returncode}: {err}")
    return proc.returncode


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def normalised_results(run_dir: Path) -> list[dict[str, Any]]:
    rows = []
    for row in _jsonl(run_dir / "results.jsonl"):
        row = {k: v for k, v in row.items() if k not in VOLATILE_RESULT_FIELDS}
        if row["status"] == "infra_error":  # which error a dead endpoint gave, and after how many tries
            row.pop("error_detail"), row.pop("error_class")
        rows.append(row)
    return rows


def normalised_scores(run_dir: Path) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in row.items() if k not in VOLATILE_SCORE_FIELDS} for row in _jsonl(run_dir / "scores.jsonl")
    ]


def normalised_pairwise(run_dir: Path) -> dict[str, Any] | None:
    """The pairwise stage's battles and report, without where the run lives and how many of its calls
    one process made (a resumed stage asks only what its killed predecessors left)."""
    if not (run_dir / "pairwise_judged.json").exists():
        return None
    report = json.loads((run_dir / "pairwise_judged.json").read_text(encoding="utf-8"))
    report.pop("run", None)
    for volatile in ("calls_made", "cache_hits", "run"):
        report.get("totals", {}).pop(volatile, None)
    return {"battles": _jsonl(run_dir / "battles.jsonl"), "report": report}


def normalised_manifest(run_dir: Path) -> dict[str, Any]:
    manifest = yaml.safe_load((run_dir / "routing_manifest.yaml").read_text(encoding="utf-8"))
    manifest.pop("generated_at", None)
    for run in manifest.get("runs", []):
        for volatile in ("created_at", "dir"):
            run.pop(volatile, None)
    reliability = manifest.get("judge_reliability") or {}
    if "calibration_store" in reliability:  # where this machine keeps calibrations (each run its own cache)
        store = reliability.pop("calibration_store")
        reliability["notes"] = [
            note.replace(str(store), "<calibration store>") for note in reliability.get("notes", [])
        ]
    return _without_latency(manifest)


def _without_latency(value: Any) -> Any:
    """Median latencies (model profiles, bucket candidates) are timing, not results."""
    if isinstance(value, dict):
        return {k: _without_latency(v) for k, v in value.items() if k != "median_latency_s"}
    if isinstance(value, list):
        return [_without_latency(v) for v in value]
    return value


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two JSON-like documents differ (paths), for a failure message worth reading."""
    if type(a) is not type(b):
        return [f"{path or '/'}: {a!r:.80} != {b!r:.80}"]
    if isinstance(a, dict):
        return [
            d for key in sorted(set(a) | set(b), key=str) for d in differences(a.get(key), b.get(key), f"{path}/{key}")
        ]
    if isinstance(a, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} entries != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r:.80} != {b!r:.80}"]


def compare(clean: Path, resumed: Path, with_manifest: bool = True) -> dict[str, Any]:
    """Counts and equality of the three artefacts (two without the manifest); ``judge_rows_by_non_judge`` must be 0."""
    rows = _jsonl(resumed / "results.jsonl")
    keys = [(r["model"], r["item_id"], r["stage"]) for r in rows]
    with sqlite3.connect(resumed / "run.sqlite") as conn:
        planned = conn.execute("SELECT COUNT(*) FROM plan").fetchone()[0]
        lost = conn.execute(
            "SELECT COUNT(*) FROM plan p LEFT JOIN results r USING (run_id, model, item_id, stage)"
            " WHERE r.status IS NULL"
        ).fetchone()[0]
    report = {
        "units_planned": planned,
        "units_recorded": len(rows),
        "units_lost": lost,
        "units_duplicated": len(keys) - len(set(keys)),
        "judge_rows_by_non_judge": sum(r["stage"].startswith("judge:") and r["answered_by"] not in PANEL for r in rows),
        "results_identical": normalised_results(clean) == normalised_results(resumed),
        "scores_identical": normalised_scores(clean) == normalised_scores(resumed),
    }
    if (clean / "pairwise_judged.json").exists() or (resumed / "pairwise_judged.json").exists():
        pairwise = normalised_pairwise(clean), normalised_pairwise(resumed)
        report["pairwise_identical"] = pairwise[0] == pairwise[1]
        report["pairwise_differences"] = differences(*pairwise)[:10]
    if with_manifest:
        report["manifest_identical"] = normalised_manifest(clean) == normalised_manifest(resumed)
        report["manifest_differences"] = differences(normalised_manifest(clean), normalised_manifest(resumed))[:10]
    return report
