"""``leaderboard.md``: the leaderboards as Markdown tables, one section per family (never blended)."""

from __future__ import annotations

from typing import Any

from eval.items.scores import FAMILIES


def fmt(value: Any, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}" if isinstance(value, float) else str(value)


def fmt_ci(stat: dict[str, Any] | None, digits: int = 3) -> str:
    if not stat or stat.get("value") is None:
        return "–"
    lo, hi = stat["ci"]
    return f"{fmt(stat['value'], digits)} [{fmt(lo, digits)}, {fmt(hi, digits)}]"


def md_text(text: Any) -> str:
    """Table-safe text: pipes escaped, newlines flattened, angle brackets as entities."""
    return (
        str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")
    )


PRIORITY = (
    "pass_rate",
    "judge_pass_rate",
    "param_score",
    "safety",
    "accuracy",
    "macro_f1",
    "safety_floor_rate",
    "unsupported_rate",
    "p1",
    "p2",
    "p3",
    "p4",
)


def _extra_metrics(bucket: dict[str, Any], limit: int = 6) -> list[str]:
    """Up to ``limit`` further statistics: the routing-relevant ones first, then judge sub-metrics."""
    seen = list(dict.fromkeys(name for cell in bucket["cells"] for name in cell["metrics"]))
    seen = [name for name in seen if name not in (bucket["primary"], "score")]
    return sorted(
        seen, key=lambda name: (PRIORITY.index(name) if name in PRIORITY else len(PRIORITY), seen.index(name))
    )[:limit]


def route_status(route: dict[str, Any]) -> str:
    """One line on a bucket's decision: the pick, how it was made, and who serves an unroutable bucket."""
    if not route:
        return "–"
    if not route.get("routable"):
        served = f"; served by {route['served_by']}: {route['model']}" if route.get("model") else "; no fallback"
        return ("insufficient data" if route.get("insufficient_data") else "not routable") + served
    if route.get("chosen_by") == "judged_battles":
        judges = ", ".join(
            f"{j['judge']} (position consistency {j.get('consistent')})" for j in route["judged"]["judges"]
        )
        return (
            f"winner: {route['model']} — decided by judged battles ({route['judged']['n_battles']} battles, sign test, "
            f"Holm, α = {route.get('alpha')}; judged by {judges}); the scores tied "
            + ", ".join(route.get("tied_top", []))
        )
    if route.get("decisive"):
        how = (
            "only eligible model"
            if route.get("chosen_by") == "only_candidate"
            else f"significantly best ({route.get('method')}, Holm, α = {route.get('alpha')})"
        )
        return f"winner: {route['model']} — {how}"
    return (
        f"no model shown better ({route.get('method')}, Holm, α = {route.get('alpha')}): tied "
        + ", ".join(route.get("tied_top", []))
        + f"; tie rule picks {route['model']}"
    )


def truncated_note(cell: dict[str, Any]) -> str:
    """ " (7 truncated)" beside a cell's score when some of its answers were cut at their token budget."""
    cut = cell.get("truncated") or 0
    return f" ({cut} truncated)" if cut else ""


def bucket_table(bucket: dict[str, Any]) -> list[str]:
    extra = _extra_metrics(bucket)
    head = ["model", "n", f"{bucket['primary']} [95% CI]", *extra, "infra errors"]
    lines = [
        "| " + " | ".join(md_text(h) for h in head) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|",
    ]
    for cell in bucket["cells"]:
        shown = cell["model"] + (" (estimated)" if cell.get("estimated") else "")
        row = [md_text(shown), str(cell["n"]), fmt_ci(cell["primary"]) + truncated_note(cell)]
        row += [fmt_ci(cell["metrics"].get(name)) for name in extra]
        row.append(str(cell["infra_errors"]))
        lines.append("| " + " | ".join(row) + " |")
    return lines


CHECK_NAMES = {"sql": "SQL execution match", "api_call": "API-call structure match"}


def check_note(bucket: dict[str, Any]) -> list[str]:
    """One line under a bucket ranked by an objective check: what the score is, and the judge beside it."""
    check = bucket.get("check")
    if not check:
        return []
    fallback = check["judge_fallback_items"]
    judged = any("judge_pass_rate" in cell["metrics"] for cell in bucket["cells"])
    return [
        "",
        (
            f"score = {CHECK_NAMES.get(check['kind'], check['kind'])} ({check['metric']})"
            + (", the judge's pass rate beside it" if judged else "; no judge verdicts on these answers")
            + (f"; {fallback} item(s) scored by the judge because their reference does not run" if fallback else "")
            + "."
        ),
    ]


def stale_note(bucket: dict[str, Any]) -> list[str]:
    """One line under a bucket some of whose items carry a gold point a freshness audit found drifted."""
    stale = bucket.get("gold_may_be_stale")
    if not stale:
        return []
    shown = "; ".join(stale["points"][:3]) + (" …" if len(stale["points"]) > 3 else "")
    return [
        "",
        f"⚠ gold may be stale: {stale['items']} of its items carry a gold point the freshness audit found drifted "
        f"({shown}); they are kept in every statistic.",
    ]


def stale_gold_section(leaderboard: dict[str, Any]) -> list[str]:
    """The freshness audit's drifted gold points and the items of this build that carry them."""
    audit = leaderboard.get("gold_freshness")
    if not audit:
        return []
    out = [
        "## Gold may be stale",
        "",
        (
            f"Freshness audit `{md_text(audit['audit'])}` ({md_text(audit['generated_at'])}, judged by "
            f"{md_text(', '.join(audit['judges']) or '–')}): {len(audit['drifted_points'])} of {audit['points']} gold "
            f"points drifted; {audit['flagged_items']} item(s) of this build carry one, in {len(audit['buckets'])} "
            "bucket(s). The judge answered from its own knowledge, which has a cutoff; the items are kept — a "
            "person decides whether the gold changes."
        ),
        "",
    ]
    if audit["drifted_points"]:
        out += ["| gold point | domain | guideline | note | items in this build |", "|---|---|---|---|---|"]
        for point in audit["drifted_points"]:
            items = ", ".join(md_text(i) for i in point["items_in_build"]) or "–"
            out.append(
                f"| {md_text(point['text'])} | {md_text(point['domain'])} | {md_text(point['current_guideline'])} "
                f"| {md_text(point['note'])} | {items} |"
            )
        out.append("")
    return out


def variants_text(counts: dict[str, int] | None) -> str:
    """A judge's ``score_variants`` (``routing.judges.reliability``) as "weighted 812 · argmax 4"."""
    return " · ".join(f"{k} {v}" for k, v in (counts or {}).items() if v) or "–"


def score_variants_section(reliability: dict[str, Any] | None) -> list[str]:
    """Which variant each judge's numbers are (probability-weighted or argmax); nothing when no row says."""
    judges = {
        j: v["score_variants"] for j, v in ((reliability or {}).get("judges") or {}).items() if v.get("score_variants")
    }
    if not judges:
        return []
    out = [
        "## Judged scores: weighted or argmax",
        "",
        "Weighted: the expectation over the judge's token probabilities; argmax: its most likely labels; "
        "mixed: a panel whose members differ.",
        "",
    ]
    out += [f"- {md_text(j)}: scores: {variants_text(c)}" for j, c in judges.items()]
    out += [f"- warning: {md_text(w['message'])}" for w in reliability["warnings"] if w["kind"] == "score_variant"]
    out.append("")
    return out


REFERENCE_POINTS = 95  # the MedBench score of the reference answers the capability judge compares against


def reference_gap_section(buckets: list[dict[str, Any]]) -> list[str]:
    """Each capability task's judged score beside its gap to the reference answers (the
    med-agent-verifier README's gap-to-95): the judge scores a candidate against a reference answer
    that scored 95 on MedBench, so 1.0 means "as good as the reference", ``gap = 1 − score`` and
    ``95 × score`` reads the score on that scale. A reading relative to the reference, not a MedBench
    score. Tasks ranked by an objective check use the judge's view of the same answers."""
    rows = []
    for bucket in buckets:
        for cell in bucket["cells"]:
            stat = cell["metrics"].get("judge_score") if bucket.get("check") else cell["primary"]
            if stat and stat.get("value") is not None:
                lo, hi = stat["ci"]
                rows.append(
                    f"| {md_text(bucket['name'])} | {md_text(cell['model'])} | {cell['n']} | {fmt_ci(stat)} "
                    f"| {fmt(1 - stat['value'])} [{fmt(1 - hi)}, {fmt(1 - lo)}] "
                    f"| {REFERENCE_POINTS * stat['value']:.1f} |"
                )
    if not rows:
        return []
    return [
        "### Gap to the reference answers",
        "",
        (
            "The judge scores each answer against the item's reference answer: score 1.0 = as good as the "
            f"reference; gap = 1 − score. For the MedBench agent suite, whose reference answers scored "
            f"{REFERENCE_POINTS}, {REFERENCE_POINTS} × score reads it on that scale (relative to the reference, "
            "not a MedBench score; other suites: read the gap only)."
        ),
        "",
        f"| task | model | n | score [95% CI] | gap [95% CI] | ≈ of {REFERENCE_POINTS} |",
        "|---|---|---:|---:|---:|---:|",
        *rows,
        "",
    ]


def objective_sections(leaderboard: dict[str, Any]) -> list[str]:
    """Check-vs-judge agreement and DR-beside-source tables (``routing.judges.objective``); nothing when absent."""
    out: list[str] = []
    checks = leaderboard.get("checks") or []
    if checks:
        out += [
            "## Objective checks vs the judge",
            "",
            (
                "Same answers: the check's pass beside the judge's pass (total ≥ 34 and safety ≥ 8); agreement = share "
                "where both say the same; Cohen's κ (– below 5 answers or when both are constant)."
            ),
            "",
            "| task | check | model | checked | check pass [95% CI] | judged | judge pass [95% CI] | agreement | κ |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|",
        ]
        for entry in checks:
            for m in entry["models"]:
                out.append(
                    f"| {md_text(entry['bucket'])} | {md_text(entry['kind'])} | {md_text(m['model'])} "
                    f"| {m['n_checked']} "
                    f"| {fmt_ci(m['check_pass_rate'])} | {m['n_both']} | {fmt_ci(m['judge_pass_rate'])} "
                    f"| {fmt(m['agreement'])} | {fmt(m['kappa'])} |"
                )
        out.append("")
    pairs = leaderboard.get("decision_recognition") or []
    if pairs:
        out += [
            "## Decision recognition beside the open answer",
            "",
            "The same items asked twice: pick among options (DR accuracy) and answer openly (the source task's score).",
            "",
            "| DR task | source task | model | items | DR accuracy [95% CI] | source score [95% CI] |",
            "|---|---|---|---:|---:|---:|",
        ]
        for entry in pairs:
            for m in entry["models"]:
                out.append(
                    f"| {md_text(entry['task'])} "
                    f"| {md_text(entry['source_task'])} ({md_text(entry['source_statistic'])}) "
                    f"| {md_text(m['model'])} | {m['n']} | {fmt_ci(m['dr_accuracy'])} | {fmt_ci(m['source_score'])} |"
                )
        out.append("")
    return out


def judged_battles_section(block: dict[str, Any] | None) -> list[str]:
    """The judged battles of the pairwise stage (``battles: judged``), apart from the score-derived boards."""
    if not block:
        return []
    out = [
        "## Judged battles (pairwise stage)",
        "",
        "The judge compared the answers of the tied models side by side, in both orders; a win only when both orders "
        "agree, else a tie. Never mixed with the score-derived battles.",
        "",
        "| judge | pairs | position consistency | first position picked |",
        "|---|---:|---:|---:|",
    ]
    for judge, c in block["judges"].items():
        out.append(f"| {md_text(judge)} | {c['pairs']} | {fmt(c['consistent'])} | {fmt(c['first_position'])} |")
    out += ["", *(f"- warning: {md_text(w)}" for w in block["warnings"])]
    for bucket_id, entry in block["buckets"].items():
        d = entry["judged_decision"]
        rates = ", ".join(f"{md_text(m)} {fmt(r)}" for m, r in (d.get("win_rates") or {}).items())
        verdict = f"decisive: {md_text(d['leader'])}" if d["decisive"] else "still tied: " + ", ".join(d["tied_top"])
        out.append(f"- {md_text(bucket_id)}: {d['n_battles']} battles; judged win rates {rates}; {verdict}")
    out.append("")
    return out


def render_markdown(leaderboard: dict[str, Any], hard: dict[str, Any], manifest: dict[str, Any]) -> str:
    runs = ", ".join(f"`{md_text(r['run_id'])}`" for r in leaderboard["runs"])
    params = leaderboard["parameters"]
    out = [
        "# Leaderboards",
        "",
        (
            f"Runs: {runs}. Generated {leaderboard['generated_at']}. Every cell: n scored items, value with its 95% "
            "CI (Wilson with continuity correction for pass/fail rates, t for continuous means, macro-F1: percentile "
            f"bootstrap ∪ Wilson, {params['bootstrap']} resamples, seed {params['seed']}), infra errors "
            "(excluded from every statistic)"
            f"{'; only items every model answered (--common)' if params['common'] else ''}."
        ),
        "",
    ]
    for family in FAMILIES:
        buckets = leaderboard["families"].get(family)
        if not buckets:
            continue
        out += [f"## {family}", ""]
        if family == "live" and leaderboard.get("live"):
            out += [md_text(leaderboard["live"]["note"]), ""]
        for bucket in buckets:
            status = route_status(manifest["buckets"].get(bucket["id"], {}))
            out += [
                f"### {md_text(bucket['kind'])}: {md_text(bucket['name'])}",
                "",
                f"{bucket['items']} items; {md_text(status)}",
                *check_note(bucket),
                *stale_note(bucket),
                "",
                *bucket_table(bucket),
                "",
            ]
        if family == "capability":
            out += reference_gap_section([b for b in buckets if b["kind"] == "task"])
    out += objective_sections(leaderboard)
    out += judged_battles_section(leaderboard.get("judged_battles"))
    out += score_variants_section(leaderboard.get("judge_reliability"))
    out += stale_gold_section(leaderboard)
    method = hard["method"]
    cap = f", at most {method['cap']}" if method.get("cap") is not None else ""
    out += [
        "## Full vs Hard",
        "",
        (
            f"Hard subset: {len(hard['item_ids'])} items, "
            f"per (family, task) the hardest {round(100 * method['fraction'])}% "
            f"(small groups: up to {method['min_items']} items, never more than half{cap}) by D = (1 − mean) + "
            f"{method['lam']}·variance of the per-item score over {len(hard['models'])} models "
            "(continuous where the scorer has one, else pass/fail)."
        ),
        "",
        "| model | tasks | full | hard | gap |",
        "|---|---:|---:|---:|---:|",
    ]
    for model, entry in sorted(hard["full_vs_hard"].items()):
        macro = entry["macro"]
        out.append(
            f"| {md_text(model)} | {macro['tasks']} "
            f"| {fmt(macro['full'])} | {fmt(macro['hard'])} | {fmt(macro['gap'])} |"
        )
    out += [
        "",
        "| task | family | score | items | hard | model | full | hard | gap |",
        "|---|---|---|---:|---:|---|---:|---:|---:|",
    ]
    for group, t in hard["tasks"].items():
        for model in t["models"]:
            e = hard["full_vs_hard"].get(model, {}).get("tasks", {}).get(group)
            if e:
                out.append(
                    f"| {md_text(t['task'])} | {md_text(t['family'])} | {t['score']} | {t['items']} | {t['selected']} "
                    f"| {md_text(model)} | {fmt(e['full'])} | {fmt(e['hard'])} | {fmt(e['gap'])} |"
                )
    default, orch = manifest["default"], manifest["orchestrator"]
    out += [
        "",
        "## Routing",
        "",
        f"- default model: {decision_line(default)}",
        f"- orchestrator: {decision_line(orch)}",
    ]
    for cand in orch.get("not_nominated", []):
        out.append(f"  - not nominated: {md_text(cand['model'])} — {md_text(cand['reason'])}")
    for family, decision in manifest.get("families", {}).items():
        out.append(f"- {md_text(family)} (fallback for its unroutable buckets): {decision_line(decision)}")
    out.append("")
    return "\n".join(out)


def decision_line(decision: dict[str, Any]) -> str:
    """``default`` / family / orchestrator decision as text: the pick, and whether it is a real winner."""
    model = md_text(decision.get("model") or "–")
    if decision.get("model") is None:
        return model + (f" — {md_text(decision['reason'])}" if decision.get("reason") else "")
    if decision.get("method") == "paired_test":
        return f"{model} (significantly better than every other candidate, {md_text(decision.get('test'))}, Holm)"
    if decision.get("method") == "only_candidate":
        return f"{model} (the only candidate)"
    tied = ", ".join(t for t in decision.get("tied_top", []) if t != decision.get("model"))
    return f"{model} (tie rule: no model shown better; tied with {md_text(tied)})"
