"""Three synthetic nights for the history, compare and trend tests (built on tests.routing.run_fixtures).

- night 1: three models (alpha strong, beta middling, a hostile-named third weak), nothing cached;
- night 2: the same answers, except alpha now fails every single-choice exam item — a regression in
  one bucket that also hands the exam leadership to beta (a manifest change); half the answers cached;
- night 3: the same scores judged by another judge (judged families not comparable), and the third
  model run at another temperature (a changed identity); every answer cached.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from routing.build import BuildOptions, build
from tests.routing.run_fixtures import JUDGE, OTHER_JUDGE, synthetic_rows, write_run

HOSTILE = "<script>document.title='PWNED'</script>"
STRENGTHS = {"alpha": 0.85, "beta": 0.6, "gamma": 0.3}
NIGHTS = ("night-1", "night-2", "night-3")
FAST = BuildOptions(bootstrap=100, bt_rounds=10, elo_rounds=5, cv_folds=0)
DATA_FP = "data-fp-nightly"


def write_results(run_dir: Path, rows: Iterable[Mapping[str, Any]], cached_every: int | None) -> None:
    """A results.jsonl with one answer row per score row (``cached`` on every ``cached_every``-th) and a
    judge row each."""
    lines = []
    for i, r in enumerate(rows):
        cached = cached_every is not None and i % cached_every == 0
        base = {"run_id": run_dir.name, "model": r["model"], "item_id": r["item_id"], "status": "ok", "text": "answer"}
        lines.append({**base, "stage": "answer", "cached": cached})
        lines.append({**base, "stage": "judge:abc", "cached": False, "model": r["model"]})
    (run_dir / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


def night_rows(night: int, n_items: int = 30) -> list[dict[str, Any]]:
    rows = synthetic_rows(STRENGTHS, n_items=n_items, seed=0, infra_rate=0.0, names={"gamma": HOSTILE})
    for r in rows:
        if night >= 2 and r["model"] == "alpha" and r["task"] == "single_choice":
            r.update(value=0.0, passed=False)
        if night >= 3:
            if r["judge"] is not None:
                r["judge"] = dict(OTHER_JUDGE)
            if r["model"] == HOSTILE:
                r["model_identity"] = {**r["model_identity"], "temperature": 0.7}
        assert night >= 3 or r["judge"] in (None, JUDGE)
    return rows


def make_night(root: Path, night: int, n_items: int = 30, build_manifest: bool = True) -> Path:
    """Night ``night`` (1–3) as ROOT/night-N with scores, summary, results and (optionally) the routing build."""
    run_dir = root / NIGHTS[night - 1]
    rows = night_rows(night, n_items)
    write_run(run_dir, rows, run_id=run_dir.name, created_at=f"2026-11-0{night}T02:00:00Z", data_fingerprint=DATA_FP)
    write_results(run_dir, rows, {1: None, 2: 2, 3: 1}[night])
    if build_manifest:
        build([run_dir], None, FAST, calibration_dir=root / "no-calibrations")
    return run_dir


def make_nights(root: Path, n_items: int = 30) -> list[Path]:
    return [make_night(root, night, n_items) for night in (1, 2, 3)]
