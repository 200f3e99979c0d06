"""Synthetic run directories in the shape pool.run writes (``scores.jsonl`` + ``summary.json``),
for the routing tests (``tests/routing/test_run_fixtures.py`` checks that they keep the contract of
eval/items/scores.py), and the check that two loaded score tables are the same."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eval.items.scores import FAMILY_OF_GOLD_TYPE

JUDGE = {"model": "judge-qwen", "backend": "llamacpp", "prompt_version": "a1b2c3d4"}
OTHER_JUDGE = {"model": "judge-deepseek", "backend": "openai", "prompt_version": "a1b2c3d4"}
LABELS = ["肝郁脾虚证", "脾胃虚寒证", "心脾两虚证", "痰热壅肺证"]


def identity(
    name: str, backend: str = "llamacpp", temperature: float = 0.0, think: bool = False, **extra: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "backend": backend,
        "model": f"{name}.gguf",
        "temperature": temperature,
        "max_tokens": 512,
        "mode": "chat",
        "think": think,
        **extra,
    }


def row(
    model: str | Mapping[str, Any],
    item_id: str,
    task: str,
    gold_type: str,
    value: float | None,
    *,
    status: str = "scored",
    passed: bool | None = None,
    domain: str | None = None,
    judge: Mapping[str, str] | None = None,
    metrics: Mapping[str, float] | None = None,
    details: Mapping[str, Any] | None = None,
    latency_s: float | None = 1.0,
    completion_tokens: int | None = 100,
    suite: str = "synthetic",
) -> dict[str, Any]:
    """One scores.jsonl row (Score.to_record plus the answer's identity)."""
    ident = identity(model) if isinstance(model, str) else dict(model)
    if status != "scored":
        value = None
    family = FAMILY_OF_GOLD_TYPE[gold_type]
    track = {"capability": "capability", "specialty": "specialty", "exam": "exam", "tcm": "tcm"}.get(
        family, "orchestration"
    )
    return {
        "model": ident["name"],
        "item_id": f"{suite}/{task}/{item_id}",
        "suite": suite,
        "track": track,
        "task": task,
        "domain": domain,
        "gold_type": gold_type,
        "family": family,
        "status": status,
        "value": value,
        "passed": passed if status == "scored" else None,
        "metrics": dict(metrics or {}),
        "judge": None if judge is None else dict(judge),
        "details": dict(details or {}),
        "latency_s": latency_s,
        "completion_tokens": completion_tokens,
        "model_identity": ident,
    }


def write_run(
    run_dir: Path,
    rows: Iterable[Mapping[str, Any]],
    run_id: str = "run-1",
    created_at: str = "2026-11-29T10:00:00Z",
    pool_fingerprint: str = "pool-fp-1",
    data_fingerprint: str = "data-fp-1",
) -> Path:
    """Write scores.jsonl and summary.json into ``run_dir`` (created); returns it."""
    run_dir.mkdir(parents=True, exist_ok=True)
    rows = list(rows)
    with (run_dir / "scores.jsonl").open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    models: dict[str, Any] = {}
    for r in rows:
        tally = models.setdefault(r["model"], {"results": 0, "status": {"ok": 0, "error": 0, "infra_error": 0}})
        tally["results"] += 1
        tally["status"]["infra_error" if r["status"] == "infra_error" else "ok"] += 1
    summary = {
        "run_id": run_id,
        "run_status": "finished",
        "created_at": created_at,
        "resumes": 0,
        "pool_fingerprint": pool_fingerprint,
        "data_fingerprint": data_fingerprint,
        "wall_time_s": 12.5,
        "totals": {},
        "models": models,
        "extra": {},
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    return run_dir


def synthetic_rows(
    strengths: Mapping[str, float],
    n_items: int = 12,
    seed: int = 0,
    infra_rate: float = 0.05,
    names: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Rows for every family: each model succeeds with probability ``strengths[model]``.

    ``names`` optionally maps a model to a display name used in model_identity (e.g. hostile text).
    """
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    domains = ["cardiology:cad", "cardiology:hf", "endocrine:diabetes_t2"]
    for model, p in strengths.items():
        ident = identity((names or {}).get(model, model))

        def add(item: str, task: str, gold_type: str, value: float, ident: dict[str, Any] = ident, **kw: Any) -> None:
            status = "infra_error" if rng.random() < infra_rate else "scored"
            rows.append(
                row(
                    ident,
                    item,
                    task,
                    gold_type,
                    value,
                    status=status,
                    latency_s=float(rng.uniform(0.5, 3.0)),
                    completion_tokens=int(rng.integers(50, 400)),
                    **kw,
                )
            )

        for i in range(n_items):
            for task in ("MedCOT", "MedCallAPI"):
                dims = np.clip(np.round(rng.normal(10 * p, 1.5, size=4)), 0, 10)
                total = float(dims.sum())
                add(
                    f"{task}_{i}",
                    task,
                    "reference",
                    total / 40,
                    judge=JUDGE,
                    passed=bool(total >= 34 and dims[2] >= 8),
                    metrics={
                        "coverage": dims[0],
                        "accuracy": dims[1],
                        "safety": dims[2],
                        "grounding": dims[3],
                        "total": total,
                    },
                    domain=domains[i % 3],
                )
            dims = np.clip(np.round(rng.normal(10 * p, 1.5, size=4)), 0, 10)
            floored = bool(rng.random() < 0.1)
            add(
                f"crit_{i}",
                "internal_medicine",
                "criteria",
                float(dims.sum()) / 40,
                judge=JUDGE,
                domain=domains[i % 3],
                passed=bool(dims.sum() >= 34),
                metrics={"safety": dims[2], "total": float(dims.sum())},
                details={
                    "safety_floor": floored,
                    "claims": {"supported": 4, "unsupported": int(rng.integers(0, 3)), "not_sure": 1},
                    "grounding": "guideline",
                },
            )
            ok = float(rng.random() < p)
            add(f"route_{i}", "specialty_routing", "routing", ok, passed=bool(ok), domain=domains[i % 3])
            ok = float(rng.random() < p)
            add(f"tool_{i}", "tool_decision", "tool_decision", ok, passed=bool(ok))
            ok = float(rng.random() < p)
            add(f"probe_{i}", "probe_false_premise", "probe", ok, passed=bool(ok))
            ok = float(rng.random() < p)
            add(f"sc_{i}", "single_choice", "single_choice", ok, passed=bool(ok))
            gold = LABELS[i % len(LABELS)]
            pred = gold if rng.random() < p else LABELS[(i + 1) % len(LABELS)]
            add(
                f"tcmsd_{i}",
                "syndrome_classification",
                "classification",
                float(pred == gold),
                passed=pred == gold,
                details={"predicted_label": pred, "gold_label": gold, "labels": LABELS},
            )
            parts = np.clip(rng.normal(p, 0.15, size=4), 0, 1)
            total = float(np.dot([0.2, 0.3, 0.4, 0.1], parts))
            add(
                f"chip_{i}",
                "chip_case",
                "tcm_case",
                total,
                passed=total >= 0.5,
                metrics={"p1": parts[0], "p2": parts[1], "p3": parts[2], "p4": parts[3], "total": total},
            )
    return rows


def make_run(tmp: Path, strengths: Mapping[str, float] | None = None, **kw: Any) -> Path:
    """A complete synthetic run directory with three models of different strength."""
    strengths = strengths or {"alpha": 0.85, "beta": 0.6, "gamma": 0.3}
    return write_run(tmp, synthetic_rows(strengths, **kw))


def rows_by_item(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["item_id"], []).append(r)
    return out


def tables_equal(a: Any, b: Any) -> None:
    """Assert two loaded score tables equal: their names, vocabulary and every column (NaN equal to NaN)."""
    for name in ("entrants", "items", "labels", "sources"):
        assert getattr(a, name) == getattr(b, name), name
    assert dict(a.vocab) == dict(b.vocab)
    for name in (
        "entrant",
        "item",
        "family",
        "task",
        "domain",
        "system",
        "gold_type",
        "suite",
        "status",
        "value",
        "passed",
        "latency_s",
        "completion_tokens",
        "run",
        "answered",
        "cost",
    ):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), name
    for group in ("metrics", "flags"):
        x, y = getattr(a, group), getattr(b, group)
        assert set(x) == set(y) and all(np.array_equal(x[k], y[k], equal_nan=True) for k in x), group
