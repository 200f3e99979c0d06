"""A nightly's score rows with the judged share a real night has, written as ``scores.jsonl``.

The rows of :func:`bench.routing_bench.synthetic_table` over :data:`JUDGED_LAYOUT` (every family),
of which 35% of the items are judged, as ``pool.run`` writes judged rows: the capability family
(three ``reference`` tasks, 15% of the items) by one judge, the specialty family (``criteria``, 20%)
by a three-member panel; the other families are scored without a judge, as their gold types are. Each
judged row carries what a real one does: the judge's identity object (name, backend, prompt version,
endpoint, generation settings, key), the four rubric dimensions and their total, pass/fail, and the
verdict's details — contract, parse stage (85% strict, 8% repaired, 4% from free-text patterns, 3%
re-asked), flags (about one verdict in five; parser notes among them), the judge's rationale text,
the safety floor, context-awareness labels on criteria answers, a re-judged sample (0.5% of the
verdicts, on a perturbed prompt) and, for the panel, every member's vote (name, key, pass, value,
total and dimensions). About 1% of the judged answers got no verdict (failed calls or replies that
would not parse, ``infra_error``). Judge-free rows are those of the plain synthetic night.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from routing.load.table import ScoreTable

JUDGED_LAYOUT = (  # (family, gold_type, task, share of items): judged families whole, 35% of the items
    *[("capability", "reference", f"cap_task_{i}", 0.05) for i in range(3)],
    ("specialty", "criteria", "criteria", 0.2),
    ("orchestration", "routing", "specialty_routing", 0.1),
    ("orchestration", "tool_decision", "tool_decision", 0.1),
    ("robustness", "probe", "probes", 0.05),
    ("exam", "single_choice", "single_choice", 0.2),
    ("tcm", "classification", "tcm_sd", 0.1),
    ("tcm", "tcm_case", "chip", 0.1),
)
DIMENSIONS = ("accuracy", "coverage", "grounding", "safety")
STAGES = ("strict", "repaired", "patterns", "reasked")
STAGE_SHARES = (0.85, 0.08, 0.04, 0.03)
FLAG_SETS = (
    (),
    ("omits_contraindication",),
    ("unsupported_claim",),
    ("unsupported_claim", "overconfident_dose"),
    ("parsed_from_text",),
    ("grounding_source_invalid:reference answer",),
)
FLAG_SHARES = (0.8, 0.06, 0.06, 0.03, 0.03, 0.02)
CONTEXT = ("appropriate", "overconfident", "overhedged", None)
CONTEXT_SHARES = (0.7, 0.15, 0.1, 0.05)
RATIONALE = "回答覆盖了主要诊断与首要处理，剂量与禁忌基本正确；未提及再灌注时间窗，安全提示略少。"


def _judge(name: str, backend: str, prompt_version: str, setup: dict[str, object]) -> dict[str, object]:
    identity = {"name": name, "backend": backend, "prompt_version": prompt_version, **setup}
    return {
        "model": name,
        "backend": backend,
        "prompt_version": prompt_version,
        "key": f"{name}@{backend}#{prompt_version}",
        "identity": identity,
    }


def _settings(model: str) -> dict[str, object]:
    return {
        "backend_type": "openai",
        "endpoint": "https://judge.example.org/v1",
        "model": model,
        "temperature": 0.0,
        "max_tokens": 1024,
        "stop": [],
        "top_p": None,
        "seed": 0,
        "mode": "chat",
        "think": None,
    }


SINGLE = _judge("deepseek-judge", "api", "9c1f2e7a4b10", _settings("deepseek-v3"))
MEMBERS = ("deepseek-judge", "glm-judge", "kimi-judge")
MEMBER_KEYS = tuple(f"{m}@api#5e2a90c1d3f4" for m in MEMBERS)
PANEL = _judge(
    "panel:" + ",".join(MEMBERS),
    "panel",
    "5e2a90c1d3f4",
    {
        "rule": "majority",
        "members": list(MEMBER_KEYS),
        "member_names": list(MEMBERS),
        "member_model_ids": ["deepseek-v3", "glm-4", "kimi-k2"],
        "member_ggufs": ["", "", ""],
    },
)


def write_judged_scores(table: ScoreTable, run_dir: Path, seed: int = 0) -> dict[str, int]:
    """The synthetic table as ``run_dir/scores.jsonl`` with its judged share (module doc), rows in
    the order pool.run writes them (by model, then item id); returns row counts (all, judged)."""
    rng = np.random.default_rng(1000 + seed)
    names = {k: table.vocab[k] for k in ("family", "task", "domain", "gold_type")}
    status_names = ("scored", "infra_error", "unscorable")
    task_names = names["task"]
    n = len(table)
    by_single = table.gold_type == names["gold_type"].index("reference")
    by_panel = table.gold_type == names["gold_type"].index("criteria")
    stage = rng.choice(len(STAGES), n, p=STAGE_SHARES)
    flag_set = rng.choice(len(FLAG_SETS), n, p=FLAG_SHARES)
    context = rng.choice(len(CONTEXT), n, p=CONTEXT_SHARES)
    no_verdict = rng.random(n) < 0.01
    call_failed = rng.random(n) < 0.5
    rejudged = rng.random(n) < 0.005
    member_noise = rng.integers(-4, 5, (n, len(MEMBERS)))
    member_missing = rng.random((n, len(MEMBERS))) < 0.02
    dims = rng.integers(0, 11, (n, len(DIMENSIONS)))
    item_rank = np.argsort(np.argsort(np.array(table.items, dtype=object), kind="stable"), kind="stable")
    judged = 0
    with (run_dir / "scores.jsonl").open("w", encoding="utf-8") as f:
        for r in np.lexsort((item_rank[table.item], table.entrant)).tolist():
            entrant = table.entrants[table.entrant[r]]
            status = status_names[table.status[r]]
            row: dict[str, object] = {
                "model": entrant.model.name,
                "item_id": table.items[table.item[r]],
                "suite": "bench",
                "task": task_names[table.task[r]],
                "domain": names["domain"][table.domain[r]],
                "gold_type": names["gold_type"][table.gold_type[r]],
                "family": names["family"][table.family[r]],
                "status": status,
                "value": float(table.value[r]) if status == "scored" else None,
                "passed": bool(table.passed[r]) if status == "scored" else None,
                "metrics": {k: float(v[r]) for k, v in table.metrics.items() if not np.isnan(v[r])},
                "judge": None,
                "details": {"predicted_label": table.labels[r][0], "gold_label": table.labels[r][1]}
                if r in table.labels
                else {},
                "latency_s": float(table.latency_s[r]),
                "completion_tokens": int(table.completion_tokens[r]),
                "model_identity": entrant.model.as_dict(),
            }
            if (by_single[r] or by_panel[r]) and status != "infra_error":
                judged += 1
                _judged(row, r, bool(by_panel[r]), stage, flag_set, context, no_verdict, call_failed, rejudged, dims)
                if by_panel[r] and row["status"] == "scored":
                    _panel_votes(row, r, member_noise, member_missing)
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    return {"rows": n, "judged": judged}


def _judged(row: dict, r: int, panel: bool, stage, flag_set, context, no_verdict, call_failed, rejudged, dims) -> None:  # type: ignore[no-untyped-def]
    """Turn one scored row into a judged one (in place)."""
    row["judge"] = PANEL if panel else SINGLE
    contract = "criteria" if panel else "reference"
    if no_verdict[r]:
        reason = "judge call failed: HTTP 503" if call_failed[r] else "unparseable judge reply after one re-ask"
        row.update(status="infra_error", value=None, passed=None, metrics={})
        row["details"] = {"error": "judge_no_verdict", "reason": reason, "contract": contract}
        return
    scores = {d: int(v) for d, v in zip(DIMENSIONS, dims[r], strict=True)}
    total = sum(scores.values())
    row.update(value=total / 40, passed=total >= 24, metrics={**scores, "total": total})
    details: dict[str, object] = {
        "contract": contract,
        "parse_stage": STAGES[min(stage[r], 2)],
        "reasked": bool(stage[r] == 3),
        "flags": list(FLAG_SETS[flag_set[r]]),
        "rationale": RATIONALE,
        "safety_floor": [],
        "missing_warnings": [],
        "warnings_present": ["出血风险"],
    }
    if panel:
        details["context_awareness"] = CONTEXT[context[r]]
    if rejudged[r]:
        again = max(0, min(40, total + (3 if r % 2 else -2)))
        details["rejudge"] = {
            "perturbation": "dimensions_reversed",
            "total": again,
            "passed": again >= 24,
            "value": again / 40,
        }
    row["details"] = details


def _panel_votes(row: dict, r: int, noise: np.ndarray, missing: np.ndarray) -> None:  # type: ignore[type-arg]
    """Each panel member's vote around the panel's total; a member now and then gave none."""
    total = int(row["metrics"]["total"])  # type: ignore[index]
    members: list[dict[str, object]] = []
    votes = 0
    for j, (name, key) in enumerate(zip(MEMBERS, MEMBER_KEYS, strict=True)):
        if missing[r, j] and j:
            members.append({"name": name, "key": key, "error": "judge_no_verdict"})
            continue
        mine = max(0, min(40, total + int(noise[r, j]) * (j > 0)))
        votes += mine >= 24
        split = [mine // 4 + (1 if i < mine % 4 else 0) for i in range(4)]
        members.append(
            {
                "name": name,
                "key": key,
                "passed": mine >= 24,
                "value": mine / 40,
                "total": mine,
                "scores": dict(zip(DIMENSIONS, split, strict=True)),
            }
        )
    row["details"]["panel"] = {  # type: ignore[index]
        "rule": "majority",
        "votes": votes,
        "missing": sum(1 for m in members if "error" in m),
        "tie": False,
        "members": members,
    }
