"""A varied judged night in the shape pool.run writes (``scores.jsonl`` + ``results.jsonl``), built on
tests/routing/run_fixtures.py: several judges and a panel, failed judge calls and unparseable replies,
missing and malformed fields, side labels, flags, re-judged samples, objective checks beside the judge,
answer lengths. Two such nights make the fixture the judge reliability and agreement tests read
(``tests/data/judge_reliability_golden.json`` holds what the row-by-row reading built from them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from tests.routing.run_fixtures import JUDGE, OTHER_JUDGE, identity, row, write_run

MEMBERS = ("judge-qwen", "judge-deepseek", "glm-judge")
PANEL = {
    "model": "panel:judge-qwen,judge-deepseek,glm-judge",
    "backend": "panel",
    "prompt_version": "p1p2p3p4",
    "identity": {
        "name": "panel:judge-qwen,judge-deepseek,glm-judge",
        "backend": "panel",
        "prompt_version": "p1p2p3p4",
        "rule": "majority",
        "members": [f"{m}@x#1" for m in MEMBERS],
        "member_names": list(MEMBERS),
        "member_model_ids": ["qwen2.5-7b", "deepseek-v3", "glm-4"],
        "member_ggufs": ["qwen2.5-7b.gguf", "", ""],
    },
}
FULL_JUDGE = {
    "model": "judge-kimi",
    "backend": "api",
    "prompt_version": "k1k2k3k4",
    "identity": {
        "name": "judge-kimi",
        "backend": "api",
        "prompt_version": "k1k2k3k4",
        "endpoint": "https://judge.example.org/v1",
        "model": "kimi-k2",
        "temperature": 0.0,
    },
}
MODELS = ("qwen-7b", "smol-1b", "glm-4-9b")
FLAGS = (
    [],
    ["unsupported_claim"],
    ["unsupported_claim", "unsupported_claim", "omits_warning"],
    ["parsed_from_text"],
    ["context_awareness_invalid:maybe"],
    ["injection_attempt", 3],
)
CONTEXT = ("appropriate", "overconfident", "overhedged", None, "sometimes")
BEHAVIOR = ("abstained", "refuted", "complied", "fabricated", None)


def _details(rng: np.random.Generator, i: int) -> dict[str, Any]:
    details: dict[str, Any] = {"parse_stage": ("strict", "repaired", "patterns", "odd")[i % 4], "reasked": i % 9 == 0}
    if i % 5:
        details["flags"] = list(FLAGS[int(rng.integers(len(FLAGS)))])
    if i % 7 == 0:
        details["judge_flag_dropped"] = ["injection_attempt", "injection_attempt"] if i % 2 else ["x"]
    if i % 11 == 0:
        del details["parse_stage"]
    return details


def _panel(rng: np.random.Generator, total: int, i: int) -> dict[str, Any]:
    members: list[dict[str, Any]] = []
    for j, name in enumerate(MEMBERS):
        mine = int(np.clip(total + rng.integers(-6, 7), 0, 40))
        if (i + j) % 13 == 0:
            members.append({"name": name, "key": f"{name}@x#1", "error": "no verdict"})
        elif (i + j) % 17 == 0:
            members.append({"name": name, "passed": mine >= 24})  # a vote without a total
        else:
            members.append({"name": name, "passed": mine >= 24, "value": mine / 40, "total": mine})
    if i % 19 == 0:
        members.append({"name": "stranger", "passed": True, "total": 40})  # not one of the panel's names
    return {"rule": "majority", "votes": 2, "missing": 0, "tie": False, "members": members}


def night(seed: int, items: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(scores.jsonl rows, results.jsonl rows) of one varied judged night."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for m, name in enumerate(MODELS):
        model = identity(name) if m != 2 else identity(name, backend="api")
        for i in range(items):
            total = int(rng.integers(0, 41))
            kind = i % 6
            judge = (JUDGE, OTHER_JUDGE, PANEL, FULL_JUDGE, JUDGE, PANEL)[kind]
            gold, task = (
                ("reference", "cap_a"),
                ("reference", "cap_b"),
                ("criteria", "internists"),
                ("probe", "probes"),
                ("criteria", "internists"),
                ("criteria", "internists"),
            )[kind]
            domain = (None, None, "cardiology:cad", None, "endocrine:dm", None)[kind]
            details = _details(rng, i + m)
            metrics: dict[str, float] = {"total": total, "accuracy": total // 4}
            status, value, passed = "scored", total / 40, total >= 24
            if gold == "criteria":
                details["context_awareness"] = CONTEXT[(i + m) % len(CONTEXT)]
            if gold == "probe":
                details["behavior"] = BEHAVIOR[(i + 2 * m) % len(BEHAVIOR)]
                metrics = {"success": float(passed)}
            if judge is PANEL and (i + m) % 4:
                details["panel"] = _panel(rng, total, i + m)
            if (i + m) % 10 == 3:
                details["rejudge"] = {"perturbation": "dimensions_reversed", "total": 40 - total, "passed": total < 24}
                if judge is PANEL:
                    details["rejudge"].update(first_total=total - 1, first_passed=not passed)
            elif (i + m) % 10 == 7:
                details["rejudge"] = {"perturbation": "order_swapped", "error": "judge call failed"}
            if (i + m) % 23 == 0:
                reason = "judge call failed: timeout" if i % 2 else "unparseable judge reply after one re-ask"
                status, value, passed, metrics = "infra_error", None, None, {}
                details = {"error": "judge_no_verdict", "reason": reason}
                if judge is PANEL:
                    details["panel"] = {"rule": "majority", "members": [{"name": n, "error": "x"} for n in MEMBERS]}
            elif (i + m) % 29 == 0:
                status, value, passed, metrics, details = "infra_error", None, None, {}, {"error": "http_500"}
            elif (i + m) % 31 == 0:  # an objective check kept the score; the judge gave none
                metrics = {"execution_match": 1.0, "total": total}
                details = {
                    "primary": "check",
                    "judge_error": {"error": "judge_no_verdict", "reason": "judge call failed"},
                }
            elif (i + m) % 37 == 0:  # the check is the row's value; the judge's own beside it
                metrics = {"execution_match": 0.0, "judge_value": total / 40, "judge_passed": float(passed)}
                details["primary"] = "check"
                value, passed = 0.0, False
            elif (i + m) % 41 == 0:
                details = {}
            r = row(model, f"q{i}", task, gold, value, status=status, passed=passed, domain=domain, judge=judge)
            r.update(metrics=metrics, details=details)
            if (i + m) % 41 == 0:
                del r["details"]  # a row written without details
            rows.append(r)
            if (i + m) % 8 != 5:
                text = "字" * int(40 + 30 * (i % 13) + 200 * (m == 0) + 3 * total)
                results.append(
                    {"model": name, "item_id": r["item_id"], "stage": "answer", "status": "ok", "text": text}
                )
            for member in MEMBERS if judge is PANEL else (judge["model"],):
                results.append(
                    {
                        "model": name,
                        "item_id": r["item_id"],
                        "stage": "judge:0123456789",
                        "status": "ok",
                        "answered_by": member,
                        "prompt_tokens": 300,
                        "completion_tokens": 40,
                    }
                )
    return rows, results


def write_night(folder: Path, seed: int, items: int, created_at: str, reverse: bool = False) -> Path:
    rows, results = night(seed, items)
    run = write_run(folder, rows[::-1] if reverse else rows, run_id=folder.name, created_at=created_at)
    with (run / "results.jsonl").open("w", encoding="utf-8") as f:
        for r in results:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return run


def fixture_runs(tmp: Path) -> list[Path]:
    """Two nights: the second (newer, rows in another order) re-scores a part of the first's items."""
    first = write_night(tmp / "night-1", 1, 60, "2026-11-28T02:00:00Z")
    second = write_night(tmp / "night-2", 2, 40, "2026-11-29T02:00:00Z", reverse=True)
    return [first, second]
