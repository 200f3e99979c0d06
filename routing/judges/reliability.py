"""Judge reliability from what the runs already hold: the ``judge_reliability`` block of
``leaderboard.json`` and the manifest, and the report's "Judge reliability" section.

Per model (rubric-judged answers: reference, criteria and live items with a score):

- **length bias** — Spearman ρ between the answer's length in characters (``results.jsonl``) and
  its judged value, per judge; a warning when |ρ| ≥ 0.5 on at least 5 answers;
- **length-controlled score** — per judge, the least-squares slope b of value on ln(1 + chars)
  over every model's judged answers; each answer's residual is added back to the judge's mean, so
  a model's controlled mean = raw mean − b·(its mean log length − the judge's mean log length);
- **judge/candidate family conflict** — the candidate and its judge share a model family (a
  family word such as ``qwen`` in the pool name, model id or weights of both), or the judge is the
  candidate itself: the self-preference risk the med-agent-verifier README flags;
- **contamination-resistant coverage** — as in the med-agent-verifier README: does the model have scored items in the
  families public leaderboards cannot have memorised (orchestration: derived routing and tool
  decisions; robustness: probes; live: tonight's questions, the README's 抗污染 live track), and their
  share of its scored items;
- **context-appropriateness rate** (``ctx_appropriate``) — as the med-agent-verifier README's
  ``ctx_appropriate_rate``: share of ``appropriate`` among the judge's HealthBench context-awareness
  labels (appropriate / overconfident / overhedged, ``judge.rubric.CONTEXT_LABELS``) in
  ``details.context_awareness`` of the model's judged criteria answers; ``n`` labelled answers,
  ``counts`` per label and ``unlabelled`` (the criteria contract asked, the judge gave no valid
  label: never counted either way). "not available", with the reason, when no row carries a label
  (runs judged before the criteria contract asked for it);
- **probe behaviour** (``probe_behavior``) — per model, how many judged probe answers the judge
  labelled abstained / refuted / complied / fabricated (``details.behavior``), with ``unlabelled``
  likewise: what a probe failure was (went along, or invented specifics), beside the accuracy.

Per judge (identity without the contract's prompt version):

- **parse ladder** — how each verdict was read: ``strict`` JSON, ``repaired`` JSON, ``patterns``
  in free text (all from the first reply), ``reasked`` (needed the one re-ask), ``failed`` (no
  verdict after the re-ask) and ``call_failed`` (no reply at all); counts and shares;
- **agreement** (``pool.run --rejudge-sample N``: ``details.rejudge`` of N sampled rubric
  verdicts judged again on a perturbed prompt) — Cohen's κ on pass/fail and Spearman ρ on the
  totals; a warning when κ < 0.6;
- **calibration** — the judge's calibrations (``pool.calibrate``) found in the calibration store
  by the stages this judge's verdicts have in the runs' ``results.jsonl`` (so only an identical
  judge: endpoint, model, settings and prompts); a warning when the latest one drifted;
- **flag rates** (``flags``) — per flag the judge raised (``details.flags`` of its verdicts), the
  share of its verdicts carrying it; ``flagged_rate``, the share carrying any flag about the
  answer (parser and consistency notes such as ``parsed_from_text`` are not the judge's claims
  and are left out), warned when above one half (on at least 5 verdicts): a judge that flags most
  answers is flagging by habit; ``dropped``, the claims a deterministic check of the answer did
  not confirm (``details.judge_flag_dropped``, ``judge.injection``). Answers scored without a
  judge call (``empty_answer`` / ``short_answer``) are not verdicts and are not counted;
- **score variants** (``score_variants``, only for a judge some of whose rows say which) — how many
  of its rows' values are ``weighted`` (the expectation over the judge's token probabilities),
  ``argmax`` (its most likely labels) or ``mixed`` (a panel whose members differ)
  (``details.score_variant``, ``judge.weighting``); a warning when weighted and argmax rows sit side
  by side, or any panel verdict is mixed: the judge's numbers then stand on two footings — a backend
  that stopped returning logprobs part-way, say.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from eval.items.scores import JUDGE_PASSED_METRIC, JUDGE_VALUE_METRIC
from judge.calibration.store import calibrations, for_stages
from judge.rubric import CONTEXT_LABELS
from judge.verdicts import PROBE_BEHAVIOR_LABELS
from routing.judges.panel_agreement import build_panel_agreement
from routing.load.runs import Loaded
from routing.load.table import SCORED, STATUSES, ScoreTable
from routing.load.verdicts import LADDER, SCORE_VARIANTS, VERDICT_STAGES, JudgedBuilder, JudgedColumns
from routing.load.verdicts import parse_stage_of as parse_stage_of  # where the ladder is read, re-exported

LENGTH_BIAS_RHO = 0.5
KAPPA_MIN = 0.6
MIN_N = 5  # correlations and κ on fewer pairs are reported as None
RUBRIC_FAMILIES = ("capability", "specialty", "live")
RESISTANT_FAMILIES = ("orchestration", "robustness", "live")
FLAGGED_RATE_MAX = 0.5  # a judge flagging more than this share of its verdicts is warned about
# Flags the parser or the scorer adds, not claims of the judge about the answer (and "<label>_invalid:…").
NOTE_FLAGS = ("parsed_from_text", "grounding_source_missing", "behavior_contradicts_verdict")


def is_note_flag(flag: str) -> bool:
    """A parser or consistency note (:data:`NOTE_FLAGS`, an invalid side label), not a judge's claim."""
    return flag in NOTE_FLAGS or "_invalid:" in flag


FAMILY_WORDS = (
    "deepseek",
    "qwen",
    "glm",
    "llama",
    "baichuan",
    "gpt",
    "minicpm",
    "gemma",
    "mistral",
    "mixtral",
    "phi",
    "smollm",
    "internlm",
    "yi",
    "claude",
    "gemini",
    "huatuo",
)
EXACT_WORDS = ("yi", "phi")  # too short to find inside other words


# --- pure statistics ------------------------------------------------------------------------------


def spearman(x: Sequence[float], y: Sequence[float], min_n: int = MIN_N) -> dict[str, Any]:
    """``{"n", "rho", "p_value"}``; rho None below ``min_n`` pairs or when either side is constant."""
    n = len(x)
    if n < min_n or len(set(x)) < 2 or len(set(y)) < 2:
        return {"n": n, "rho": None, "p_value": None}
    result = stats.spearmanr(x, y)
    return {"n": n, "rho": float(result.statistic), "p_value": float(result.pvalue)}


def cohen_kappa(a: Sequence[bool], b: Sequence[bool]) -> float | None:
    """κ = (p_o − p_e) / (1 − p_e) for two binary raters; None when p_e = 1 (both raters constant alike)."""
    if len(a) != len(b):
        raise ValueError(f"a and b differ in length ({len(a)} vs {len(b)})")
    if not a:
        return None
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    observed = float(np.mean(x == y))
    expected = float(x.mean() * y.mean() + (1 - x.mean()) * (1 - y.mean()))
    if expected >= 1.0:
        return None
    kappa = (observed - expected) / (1.0 - expected)
    return 0.0 if abs(kappa) < 1e-12 else kappa  # no rounding noise such as -8e-17 in the report


def length_controlled(values: Sequence[float], chars: Sequence[int], groups: Sequence[str]) -> dict[str, Any]:
    """Slope b of value on ln(1 + chars) over all rows, and per group the raw and controlled means (module doc)."""
    y, x = np.asarray(values, dtype=float), np.log1p(np.asarray(chars, dtype=float))
    slope = float(np.cov(x, y, bias=True)[0, 1] / x.var()) if len(x) >= 3 and x.var() > 0 else 0.0
    adjusted = y - slope * (x - x.mean()) if len(x) else y
    labels = np.asarray(groups)
    return {
        "slope": slope,
        "groups": {
            g: {
                "raw_mean": float(y[labels == g].mean()),
                "controlled_mean": float(adjusted[labels == g].mean()),
                "mean_chars": float(np.expm1(x[labels == g]).mean()),
            }
            for g in dict.fromkeys(groups)
        },
    }


def model_families(names: Iterable[Any]) -> set[str]:
    """Family words found in the names (pool name, model id, weights): ``qwen`` in ``Qwen/Qwen2.5-7B``."""
    found = set()
    for name in names:
        for run in re.findall(r"[a-z]+", str(name or "").lower()):
            found.update(w for w in FAMILY_WORDS if run == w or (w not in EXACT_WORDS and w in run))
    return found


def judge_verdict(row: Mapping[str, Any]) -> tuple[float | None, bool | None]:
    """The judge's own (value, passed) of a scored row: beside an objective check they are
    ``metrics.judge_value`` / ``judge_passed`` (the row's value is the check's); (None, None)
    when the judge gave the row no verdict."""
    metrics = row.get("metrics") or {}
    if JUDGE_VALUE_METRIC in metrics:
        passed = metrics.get(JUDGE_PASSED_METRIC)
        return float(metrics[JUDGE_VALUE_METRIC]), None if passed is None else bool(passed)
    if (row.get("details") or {}).get("primary") == "check":
        return None, None
    return row.get("value"), row.get("passed")


def label_shares(
    values: Sequence[Any], labels: Sequence[str], rate_of: str | None, contract: str, what: str
) -> dict[str, Any]:
    """Counts of a side label's values (``labels``; anything else, None included, is ``unlabelled``)
    and, with ``rate_of``, that label's share of the labelled ones; "not available" without any."""
    tally: dict[Any, int] = {}
    for value in values:
        key = value if isinstance(value, (str, type(None))) else json.dumps(value)
        tally[key] = tally.get(key, 0) + 1
    return label_counts(tally, labels, rate_of, contract, what)


def label_counts(
    tally: Mapping[Any, int], labels: Sequence[str], rate_of: str | None, contract: str, what: str
) -> dict[str, Any]:
    """:func:`label_shares` from how often each value was given (``tally``: value -> count)."""
    counts = {label: sum(c for v, c in tally.items() if v == label) for label in labels}
    n = sum(counts.values())
    unlabelled = sum(tally.values()) - n
    if not n:
        reason = (
            f"the judge gave no valid {what} label on any of {unlabelled} {contract} verdict(s)"
            if unlabelled
            else f"no judged {contract} answer carries a {what} label "
            f"(judged before the {contract} contract asked for it, or no {contract} items)"
        )
        return {"available": False, "reason": reason, "unlabelled": unlabelled}
    out: dict[str, Any] = {"available": True, "n": n, "counts": counts, "unlabelled": unlabelled}
    if rate_of is not None:
        out["rate"] = counts[rate_of] / n
    return out


# --- reading the runs -----------------------------------------------------------------------------


def _judge_record_key(judge: Mapping[str, Any]) -> str:
    return str(judge.get("key") or f"{judge['model']}@{judge['backend']}#{judge['prompt_version']}")


def _judge_group(judge: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(group id, identity without the contract's prompt version): one judge across contracts."""
    full = judge.get("identity") or {}
    # A panel's member keys carry each contract's prompt version too: one panel across contracts.
    dropped = ("prompt_version", "members") if full.get("backend") == "panel" else ("prompt_version",)
    identity = {k: v for k, v in full.items() if k not in dropped}
    identity = identity or {"name": judge["model"], "backend": judge["backend"]}
    return json.dumps(identity, sort_keys=True, default=str), identity


def answer_lengths(
    run_dirs: Sequence[str], wanted: set[tuple[str, str]]
) -> tuple[dict[tuple[str, str], int], dict[str, set[str]], bool]:
    """(answer length in characters per wanted (model, item), verdict stages per judge name, whether
    any answer text was found) from the runs' ``results.jsonl``, oldest run first (a later answer's
    length replaces an earlier one's). Only the wanted lengths are kept."""
    chars: dict[tuple[str, str], int] = {}
    stages: dict[str, set[str]] = {}
    any_lengths = False
    for run_dir in map(Path, run_dirs):
        results = run_dir / "results.jsonl"
        if not results.is_file():
            continue
        with results.open(encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                r = json.loads(line)
                # a re-asked answer (pool.score.guards) is the one scored: its row comes after the first's
                reask = r.get("stage") == "answer:reask" and r.get("status") != "infra_error"
                if (r.get("stage") == "answer" or reask) and isinstance(r.get("text"), str):
                    any_lengths = True
                    if (r["model"], r["item_id"]) in wanted:
                        chars[(r["model"], r["item_id"])] = len(r["text"])
                elif str(r.get("stage", "")).startswith("judge:") and r.get("status") == "ok":
                    stages.setdefault(str(r.get("answered_by") or ""), set()).add(r["stage"])
    return chars, stages, any_lengths


# --- the block ------------------------------------------------------------------------------------


def _judge_labels(groups: Mapping[str, dict[str, Any]]) -> dict[str, str]:
    plain = {g: f"{i.get('name')}@{i.get('backend')}" for g, i in groups.items()}
    clash = {p for p in plain.values() if list(plain.values()).count(p) > 1}
    return {
        g: f"{p} [{i.get('endpoint') or i.get('model') or g[:40]}]" if p in clash else p
        for (g, p), i in zip(plain.items(), groups.values(), strict=True)
    }


def _ladder(judged: JudgedColumns, positions: np.ndarray) -> dict[str, Any]:
    found = np.bincount(judged.stage[positions][judged.stage[positions] >= 0], minlength=len(LADDER))
    counts = {stage: int(c) for stage, c in zip(LADDER, found, strict=True)}
    total = sum(counts.values())
    return {"n": total, "counts": counts, "rates": {k: (v / total if total else None) for k, v in counts.items()}}


def score_variants(judged: JudgedColumns, positions: np.ndarray) -> dict[str, int] | None:
    """How many of the rows at ``positions`` carry each :data:`SCORE_VARIANTS` value; None when none says."""
    variant = judged.variant[positions]
    found = np.bincount(variant[variant >= 0], minlength=len(SCORE_VARIANTS))
    if not found.any():
        return None
    return {name: int(c) for name, c in zip(SCORE_VARIANTS, found, strict=True)}


def mixes_variants(counts: Mapping[str, int] | None) -> bool:
    """The judge's values stand on both footings: weighted and argmax ones (or a panel's mix) side by side."""
    if not counts:
        return False
    return bool(counts.get("mixed")) or (bool(counts.get("weighted")) and bool(counts.get("argmax")))


def flag_rates(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """:func:`judged_flag_rates` of judged rows as ``scores.jsonl`` holds them."""
    builder = JudgedBuilder()
    for index, row in enumerate(rows):
        builder.add(index, 0, row)
    judged = builder.take([])
    return judged_flag_rates(judged, np.arange(len(judged)))


def judged_flag_rates(judged: JudgedColumns, positions: np.ndarray) -> dict[str, Any]:
    """The judge's flags over its verdicts (the rows :func:`parse_stage_of` reads as one): per flag
    count and share, the share flagged at all (:data:`NOTE_FLAGS` aside) and the dropped claims.
    Counted per distinct flag set, so the cost grows with the sets, not with the verdicts."""
    verdicts = positions[np.isin(judged.stage[positions], [LADDER.index(s) for s in VERDICT_STAGES])]
    counts: dict[str, int] = {}
    dropped: dict[str, int] = {}
    flagged = 0
    per_set = np.bincount(judged.flags[verdicts], minlength=len(judged.flag_sets))
    for code in np.flatnonzero(per_set).tolist():
        flags, times = judged.flag_sets[code], int(per_set[code])
        for flag in flags:
            counts[flag] = counts.get(flag, 0) + times
        flagged += times * any(not is_note_flag(f) for f in flags)
    per_dropped = np.bincount(judged.dropped[verdicts], minlength=len(judged.dropped_sets))
    for code in np.flatnonzero(per_dropped).tolist():
        for flag in judged.dropped_sets[code]:
            dropped[flag] = dropped.get(flag, 0) + int(per_dropped[code])
    n = len(verdicts)
    return {
        "n": n,
        "counts": dict(sorted(counts.items())),
        "rates": {f: c / n for f, c in sorted(counts.items())},
        "flagged": flagged,
        "flagged_rate": flagged / n if n else None,
        "dropped": dict(sorted(dropped.items())),
    }


def _agreement(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    pairs = [
        (r, r["details"]["rejudge"])
        for r in rows
        if r["status"] == "scored" and isinstance((r.get("details") or {}).get("rejudge"), dict)
    ]
    if not pairs:
        return None
    done = [
        (r, s)
        for r, s in pairs
        if "total" in s and "passed" in s and ("first_total" in s or "total" in r.get("metrics", {}))
    ]
    # A panel's row holds the panel's verdict; its re-judge record carries the lead member's own (first_*).
    first = [float(s.get("first_total", r.get("metrics", {}).get("total", 0.0))) for r, s in done]
    second = [float(s["total"]) for _, s in done]
    first_pass = [bool(s["first_passed"]) if "first_passed" in s else bool(judge_verdict(r)[1]) for r, s in done]
    kappa = cohen_kappa(first_pass, [bool(s["passed"]) for _, s in done]) if len(done) >= MIN_N else None
    return {
        "perturbation": sorted({str(s.get("perturbation")) for _, s in pairs}),
        "sampled": len(pairs),
        "n": len(done),
        "failed": len(pairs) - len(done),
        "kappa_pass": kappa,
        "pass_agreement": float(np.mean([p == bool(s["passed"]) for p, (_, s) in zip(first_pass, done, strict=True)]))
        if done
        else None,
        "spearman_total": spearman(first, second),
        "mean_abs_total_diff": float(np.mean(np.abs(np.subtract(first, second)))) if done else None,
    }


def _calibration_view(record: Mapping[str, Any]) -> dict[str, Any]:
    latest = record["history"][-1]
    overall = latest["metrics"]["overall"]

    def headline(m: Mapping[str, Any]) -> dict[str, Any]:
        u = m["unsupported"]
        return {
            "n": m["n"],
            "labelled": m["labelled"],
            "precision": u["precision"],
            "recall": u["recall"],
            "f1": u["f1"],
            "accuracy_3class": m["accuracy_3class"],
        }

    return {
        "judge_key": record.get("judge_key"),
        "file": record.get("file"),
        "calibrations": len(record["history"]),
        "calibrated_at": latest.get("calibrated_at"),
        "set": latest.get("set"),
        "overall": headline(overall),
        "tiers": {t: headline(m) for t, m in latest["metrics"].get("tiers", {}).items()},
        "confusion": overall.get("confusion"),
        "drift": latest.get("drift"),
    }


def _fmt(x: float | None) -> str:
    return "–" if x is None else f"{x:.2f}"


def _judges_within(label: str, identity: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The judges a verdict's identity stands for: itself, or each member of a panel (``label/member``)."""
    names, ids, ggufs = (identity.get(k) for k in ("member_names", "member_model_ids", "member_ggufs"))
    if identity.get("backend") != "panel" or not all(isinstance(v, list) for v in (names, ids, ggufs)):
        return [(label, identity)]
    return [
        (f"{label}/{n}", {"name": n, "model": m, "gguf": g or None}) for n, m, g in zip(names, ids, ggufs, strict=False)
    ]  # type: ignore[arg-type]


def _model_tallies(loaded: Loaded) -> dict[str, dict[str, Any]]:
    """Per model label: its identity, scored rows and scored rows in contamination-resistant families
    (every row of the table, judged or not); judges and side labels are filled in from the verdicts."""
    table = loaded.table
    scored = table.status == SCORED
    resistant_codes = [table.code("family", f) for f in RESISTANT_FAMILIES if f in table.vocab["family"]]
    n = len(table.entrants)
    per_scored = np.bincount(table.entrant[scored], minlength=n)
    per_resistant = np.bincount(table.entrant[scored & np.isin(table.family, resistant_codes)], minlength=n)
    models: dict[str, dict[str, Any]] = {}
    for index, entrant in enumerate(table.entrants):
        entry = models.setdefault(
            entrant.model_label,
            {
                "identity": entrant.model.as_dict(),
                "judges": set(),
                "scored": 0,
                "resistant": 0,
                "context": {},  # side-label value -> how often the judge gave it
                "behavior": {},
            },
        )
        entry["scored"] += int(per_scored[index])
        entry["resistant"] += int(per_resistant[index])
    return models


def verdict_values(table: ScoreTable, rows: np.ndarray, primary_check: np.ndarray) -> np.ndarray:
    """:func:`judge_verdict`'s value of each of ``rows`` (NaN for None): ``metrics.judge_value``
    where the row has one, else NaN beside an objective check, else the row's value."""
    value = table.value[rows]
    own = table.metrics.get(JUDGE_VALUE_METRIC)
    if own is not None:
        mine = own[rows].astype(np.float64)
        value = np.where(np.isnan(mine), np.where(primary_check, np.nan, value), mine)
    else:
        value = np.where(primary_check, np.nan, value)
    return value


def _agreement_metrics(table: ScoreTable) -> dict[str, np.ndarray]:
    """The sub-metric columns :func:`_agreement` and :func:`judge_verdict` read."""
    wanted = ("total", JUDGE_VALUE_METRIC, JUDGE_PASSED_METRIC)
    return {k: table.metrics[k] for k in wanted if k in table.metrics}


def _record(table: ScoreTable, row: int, judged: JudgedColumns, position: int) -> dict[str, Any]:
    """One judged row as the fields :func:`_agreement` reads (built only for the re-judged sample)."""
    value, passed = float(table.value[row]), float(table.passed[row])
    details: dict[str, Any] = {"rejudge": judged.rejudge[row]}
    if judged.primary_check[position]:
        details["primary"] = "check"
    return {
        "status": STATUSES[int(table.status[row])],
        "value": None if np.isnan(value) else value,
        "passed": None if np.isnan(passed) else bool(passed),
        "metrics": {k: float(v[row]) for k, v in _agreement_metrics(table).items() if not np.isnan(v[row])},
        "details": details,
    }


def _answer_chars(loaded: Loaded, rows: np.ndarray) -> tuple[np.ndarray, dict[str, set[str]], bool]:
    """(answer length of each judged row, -1 unknown; verdict stages per judge name; whether any
    answer text was found): :func:`answer_lengths` asked only for the judged (model, item) pairs."""
    table = loaded.table
    run_dirs = [r.dir for r in loaded.runs]
    if not any((Path(d) / "results.jsonl").is_file() for d in run_dirs):
        return np.full(len(rows), -1, dtype=np.int64), {}, False
    names = [e.model.name for e in table.entrants]
    pairs = [
        (names[e], table.items[i]) for e, i in zip(table.entrant[rows].tolist(), table.item[rows].tolist(), strict=True)
    ]
    chars, stages, any_lengths = answer_lengths(run_dirs, set(pairs))
    return np.array([chars.get(pair, -1) for pair in pairs], dtype=np.int64), stages, any_lengths


def build_reliability(loaded: Loaded, calibration_dir: Path | str | None) -> dict[str, Any]:
    """The ``judge_reliability`` block (module doc) for the runs ``loaded`` read, from the judged
    rows' columns (:mod:`routing.load.verdicts`) and the table's: per-row work is array work."""
    run_dirs = [r.dir for r in loaded.runs]
    table, judged = loaded.table, loaded.judged
    rows = judged.row
    chars, judge_stages, any_lengths = _answer_chars(loaded, rows)
    label_names = list(dict.fromkeys(e.model_label for e in table.entrants))
    label_code = np.array([label_names.index(e.model_label) for e in table.entrants], dtype=np.int64)
    labels = label_code[table.entrant[rows]] if len(rows) else np.zeros(0, dtype=np.int64)
    # judge groups in the order their first verdict appears (one json.dumps per judge record, not per row)
    groups: dict[str, dict[str, Any]] = {}
    group_codes: list[str] = []
    record_group: dict[int, int] = {}
    used, first = np.unique(judged.judge, return_index=True)
    for code in used[np.argsort(first, kind="stable")].tolist():
        gid, identity = _judge_group(judged.judge_records[code])
        groups.setdefault(gid, identity)
        if gid not in group_codes:
            group_codes.append(gid)
        record_group[code] = group_codes.index(gid)
    group_of = np.full(len(judged.judge_records) + 1, -1, dtype=np.int64)
    for code, g in record_group.items():
        group_of[code] = g
    group = group_of[judged.judge] if len(rows) else np.zeros(0, dtype=np.int64)
    judge_label = _judge_labels(groups)
    warnings: list[dict[str, str]] = []
    notes: list[str] = []
    if not any_lengths:
        notes.append(
            "answer lengths not available: no results.jsonl with answer texts beside the scores, so no length "
            "correlation or length-controlled score"
        )

    models = _model_tallies(loaded)
    for lab, g in {(int(a), int(b)) for a, b in zip(labels.tolist(), group.tolist(), strict=True)}:
        models[label_names[lab]]["judges"].add(group_codes[g])
    for column, key in ((judged.context, "context"), (judged.behavior, "behavior")):
        asked = column >= 0  # asked by the row's contract; a None value = the judge gave no valid label
        pairs, counts = np.unique(labels[asked] * (len(judged.side_values) + 1) + column[asked], return_counts=True)
        for pair, count in zip(pairs.tolist(), counts.tolist(), strict=True):
            tally = models[label_names[pair // (len(judged.side_values) + 1)]][key]
            value = judged.side_values[pair % (len(judged.side_values) + 1)]
            tally[value] = tally.get(value, 0) + count

    status = table.status[rows]
    rubric_families = [table.code("family", f) for f in RUBRIC_FAMILIES if f in table.vocab["family"]]
    verdict = verdict_values(table, rows, judged.primary_check.astype(bool))
    rejudged = np.isin(rows, np.fromiter(judged.rejudge, dtype=np.int64, count=len(judged.rejudge)))
    is_rubric = (status == SCORED) & np.isin(table.family[rows], rubric_families) & (chars >= 0) & ~np.isnan(verdict)
    judges: dict[str, dict[str, Any]] = {}
    for g, (gid, identity) in enumerate(groups.items()):
        jpos = np.flatnonzero(group == g)
        name = judge_label[gid]
        # (label, chars, the judge's own value) of every rubric verdict with a known answer length
        rubric = jpos[is_rubric[jpos]]
        r_labels = [label_names[x] for x in labels[rubric].tolist()]
        r_chars, r_values = chars[rubric].tolist(), verdict[rubric].tolist()
        length = length_controlled(r_values, r_chars, r_labels)
        pooled = spearman(r_chars, r_values)
        sampled = jpos[rejudged[jpos]].tolist()
        agreement = _agreement([_record(table, int(rows[p]), judged, p) for p in sampled])
        stages = judge_stages.get(str(identity.get("name")), set())
        store = for_stages(calibrations(calibration_dir), stages) if calibration_dir is not None else []
        flags = judged_flag_rates(judged, jpos)
        if flags["flagged_rate"] is not None and flags["n"] >= MIN_N and flags["flagged_rate"] > FLAGGED_RATE_MAX:
            top = ", ".join(f for f in flags["counts"] if not is_note_flag(f))
            warnings.append(
                {
                    "kind": "flag_rate",
                    "subject": name,
                    "message": f"{name}: flags {flags['flagged']} of its {flags['n']} "
                    f"verdicts ({flags['flagged_rate']:.0%} > {FLAGGED_RATE_MAX:.0%}; {top}): "
                    "flags raised by habit say little",
                }
            )
        judges[name] = {
            "identity": identity,
            "judged": len(jpos),
            "parse_ladder": _ladder(judged, jpos),
            "flags": flags,
            "length": {**pooled, "slope_per_log_char": length["slope"]},
            "agreement": agreement,
            "calibration": [_calibration_view(c) for c in store],
        }
        variants = score_variants(judged, jpos)
        if variants is not None:
            judges[name]["score_variants"] = variants
        if mixes_variants(variants):
            warnings.append(
                {
                    "kind": "score_variant",
                    "subject": name,
                    "message": f"{name}: its scores are not all on one footing "
                    f"({variants['weighted']} weighted, {variants['argmax']} argmax, {variants['mixed']} mixed): "
                    "probability-weighted and argmax values side by side (an argmax verdict had no weighted value: "
                    "no logprobs, a repaired reply or an ambiguous score token; docs/scoring.md)",
                }
            )
        if pooled["rho"] is not None and abs(pooled["rho"]) >= LENGTH_BIAS_RHO:
            warnings.append(
                {
                    "kind": "length_bias",
                    "subject": name,
                    "message": f"{name}: its scores follow answer length "
                    f"(Spearman ρ = {pooled['rho']:.2f} over {pooled['n']} answers, |ρ| ≥ {LENGTH_BIAS_RHO})",
                }
            )
        if agreement and agreement["kappa_pass"] is not None and agreement["kappa_pass"] < KAPPA_MIN:
            warnings.append(
                {
                    "kind": "agreement",
                    "subject": name,
                    "message": f"{name}: judged again on a perturbed prompt, "
                    f"pass/fail agrees only κ = {agreement['kappa_pass']:.2f} "
                    f"over {agreement['n']} answers (< {KAPPA_MIN})",
                }
            )
        for c in judges[name]["calibration"]:
            if c["drift"] and c["drift"]["flagged"]:
                warnings.append(
                    {
                        "kind": "calibration_drift",
                        "subject": name,
                        "message": f"{name}: calibration moved since "
                        f"{c['drift']['against']} (ΔF1 {_fmt(c['drift']['delta']['f1'])}, "
                        f"Δacc {_fmt(c['drift']['delta']['accuracy_3class'])})",
                    }
                )
        if calibration_dir is not None and not store:
            notes.append(
                f"{name}: no calibration of this exact judge in {calibration_dir} "
                "(python -m pool.calibrate --pool FILE)"
            )
        rubric_labels = labels[rubric]
        for model, view in length["groups"].items():
            mine = rubric[rubric_labels == label_names.index(model)]
            corr = spearman(chars[mine].tolist(), verdict[mine].tolist())
            models[model].setdefault("length", {})[name] = {**corr, **view}
            if corr["rho"] is not None and abs(corr["rho"]) >= LENGTH_BIAS_RHO:
                warnings.append(
                    {
                        "kind": "length_bias",
                        "subject": model,
                        "message": f"{model}: {name}'s scores follow its answer "
                        f"length (Spearman ρ = {corr['rho']:.2f}, n = {corr['n']}); raw {view['raw_mean']:.3f}, "
                        f"length-controlled {view['controlled_mean']:.3f}",
                    }
                )

    out_models = {}
    for model, entry in sorted(models.items()):
        ident = entry["identity"]
        own = model_families([ident.get("name"), ident.get("model"), ident.get("gguf")])
        conflicts = {}
        for gid in sorted(entry["judges"]):
            for label, ji in _judges_within(judge_label[gid], groups[gid]):
                shared = sorted(own & model_families([ji.get("name"), ji.get("model"), ji.get("gguf")]))
                self_judged = ji.get("name") == ident.get("name") and all(
                    ji.get(k) == ident.get(k) for k in ("model", "gguf") if k in ji
                )
                if shared or self_judged:
                    conflicts[label] = {"families": shared, "self_judged": self_judged}
                    why = (
                        "is judged by itself"
                        if self_judged
                        else f"and its judge {label} are both {'/'.join(shared)} models"
                    )
                    warnings.append(
                        {
                            "kind": "family_conflict",
                            "subject": model,
                            "message": f"{model} {why} (self-preference risk)",
                        }
                    )
        out_models[model] = {
            "judges": sorted(judge_label[g] for g in entry["judges"]),
            "length": entry.get("length", {}),
            "family_conflict": {"conflict": bool(conflicts), "judges": conflicts},
            "contamination_resistant": {
                "has": entry["resistant"] > 0,
                "n": entry["resistant"],
                "scored": entry["scored"],
                "share": entry["resistant"] / entry["scored"] if entry["scored"] else None,
            },
            "ctx_appropriate": label_counts(
                entry["context"], CONTEXT_LABELS, "appropriate", "criteria", "context-awareness"
            ),
            "probe_behavior": label_counts(entry["behavior"], PROBE_BEHAVIOR_LABELS, None, "probe", "behaviour"),
        }
    panels = build_panel_agreement(table, judged, run_dirs, {e.model.name for e in loaded.table.entrants})
    warnings += panels.pop("warnings")
    return {
        "schema_version": 1,
        "thresholds": {
            "length_bias_rho": LENGTH_BIAS_RHO,
            "kappa_min": KAPPA_MIN,
            "min_n": MIN_N,
            "flagged_rate_max": FLAGGED_RATE_MAX,
        },
        "judge_panel": panels,
        "calibration_store": None if calibration_dir is None else str(calibration_dir),
        "models": out_models,
        "judges": judges,
        "warnings": warnings,
        "notes": notes,
    }
