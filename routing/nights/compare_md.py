"""``compare.md``: a comparison short enough to paste into a chat message.

Bullets, not tables (chat clients do not render Markdown tables), at most ``MAX_DELTAS``
significant changes, ``MAX_DECISIONS`` routing changes and ``MAX_GATE`` gate lines (one per family,
those with a regression or an inconclusive model first) — the rest is counted and left to
``compare.json``. Worst regressions first.
Model and bucket names are untrusted text: newlines are flattened and Markdown/HTML control
characters escaped (:func:`routing.report.markdown.md_text`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routing.nights.flips import flip_lines
from routing.report.markdown import md_text

MAX_DELTAS = 10
MAX_DECISIONS = 6
MAX_NAMES = 6
MAX_GATE = 12
_GATE_ORDER = {"regressed": 0, "inconclusive": 1, "improved": 2, "no change": 3}


def _num(x: float | None, digits: int = 3, signed: bool = False) -> str:
    return "–" if x is None else f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def _names(items: list[Any], key: str = "name") -> str:
    names = [md_text(i[key] if isinstance(i, Mapping) else i) for i in items]
    more = f" (+{len(names) - MAX_NAMES} more)" if len(names) > MAX_NAMES else ""
    return ", ".join(names[:MAX_NAMES]) + more


def _share(cached: Mapping[str, Any]) -> str:
    if cached.get("share") is None:
        return "unknown (no results.jsonl)"
    return f"{cached['share']:.0%} ({cached['cached']}/{cached['answers']})"


def verdict_line(doc: Mapping[str, Any]) -> str:
    """The first line a reader needs: regression beyond the threshold, or not."""
    regressions, significant = doc["regressions"], doc["significant"]
    worse = sum(d["direction"] == "regression" for d in doc["deltas"])
    if regressions:
        return (
            f"**REGRESSION**: {regressions} significant regression(s) larger than {doc['threshold']:.3f} "
            f"(Holm, α = {doc['alpha']}); {significant} significant change(s) of {doc['tested']} tested"
        )
    if worse:
        return (
            f"OK: {worse} significant regression(s), none larger than {doc['threshold']:.3f}; "
            f"{significant} significant of {doc['tested']} tested"
        )
    return (
        f"OK: no significant regression ({significant} significant change(s) of {doc['tested']} tested, "
        f"Holm, α = {doc['alpha']})"
    )


def _span(values: list[Any], digits: int = 3) -> str:
    """``a`` or ``a–b`` over the values given (``None`` left out)."""
    known = sorted(v for v in values if v is not None)
    if not known:
        return ""
    lo, hi = f"{known[0]:.{digits}f}", f"{known[-1]:.{digits}f}"
    return lo if lo == hi else f"{lo}–{hi}"


def gate_lines(doc: Mapping[str, Any]) -> list[str]:
    """Per family, one line: the gate's word for each of its models and the smallest drop their tests could see."""
    gate = doc.get("gate") or []
    if not gate:
        return []
    counts = {s: sum(g["status"] == s for g in gate) for s in _GATE_ORDER}
    summary = ", ".join(f"{c} {s}" for s, c in counts.items() if c)
    lines = [
        "",
        f"Gate per model and family (drop that matters {doc['min_drop']:.3f}, {doc['power']:.0%} power at the "
        f"Holm level): {summary}",
    ]
    rank: dict[str, int] = {}
    for g in gate:
        rank[g["family"]] = min(rank.get(g["family"], 9), _GATE_ORDER[g["status"]])
    families = sorted(rank, key=lambda f: (rank[f], f))
    for family in families[:MAX_GATE]:
        parts = []
        for status in _GATE_ORDER:
            members = [g for g in gate if g["family"] == family and g["status"] == status]
            if members:
                mdd = _span([g["mdd"] for g in members]) or ">1"
                n = _span([g["n"] for g in members], 0)
                parts.append(f"**{status}** {_names(members, 'model')} (MDD {mdd}, n={n})")
        lines.append(f"- {md_text(family)}: " + "; ".join(parts))
    if len(families) > MAX_GATE:
        lines.append(f"- … {len(families) - MAX_GATE} more families in compare.json")
    return lines


def sequential_lines(doc: Mapping[str, Any]) -> list[str]:
    """The sequential gate's alarms and how many comparisons are in each state."""
    seq = doc.get("sequential") or {}
    words = seq.get("comparisons") or []
    if not words:
        return []
    states: dict[str, int] = {}
    for w in words:
        key = "reference" if w["status"].startswith("reference") else w["status"]
        states[key] = states.get(key, 0) + 1
    lines = [
        "",
        f"Sequential gate ({seq['reference_nights']} reference nights, α = {seq['alpha']}): "
        + ", ".join(f"{c} {s}" for s, c in sorted(states.items())),
    ]
    for w in [w for w in words if w["status"] == "regressed"][:MAX_GATE]:
        lines.append(
            f"- ▼ {md_text(w['bucket'])} · {md_text(w['model'])}: alarm since {md_text(w['alarm_run'] or '')} "
            f"({w['monitored_nights']} monitored nights)"
        )
    for note in seq.get("notes") or []:
        lines.append(f"- {md_text(note)}")
    return lines


def render_compare_md(doc: Mapping[str, Any]) -> str:
    """The comparison document (``Comparison.to_json()``) as short Markdown."""
    base, new = doc["base"], doc["new"]
    lines = [
        f"# medpool: {md_text(base['run_id'])} → {md_text(new['run_id'])}",
        "",
        verdict_line(doc),
        "",
        (
            f"- runs: base {md_text(base['created_at'])}, new {md_text(new['created_at'])}; data "
            f"{'same' if doc['same_data'] else 'DIFFERENT'}, pool {'same' if doc['same_pool'] else 'changed'}"
        ),
    ]
    cache = doc.get("cache") or {}
    line = f"- cached answers: base {_share(base['cached'])}, new {_share(new['cached'])}"
    if cache.get("cached_in_both"):
        line += (
            f"; {cache['cached_in_both']} of {cache['paired_answers']} compared answers were cached in both runs "
            "(same text: only scoring can differ)"
        )
    lines.append(line)
    anchors = new.get("judge_anchors") or {}
    if anchors.get("asked"):
        previous = anchors.get("previous") or {}
        agreement = (
            "no earlier verdict to compare"
            if not previous.get("n")
            else f"pass/fail agreement with earlier nights' verdicts {previous['pass_agreement']:.0%} "
            f"(n={previous['n']})"
        )
        lines.append(
            f"- judge anchors: {anchors['verdicts']} of {anchors['asked']} judged afresh; {agreement}"
            f"{' ⚠ JUDGE DRIFT' if anchors.get('drift_warning') else ''}"
        )
    blocked = [(f, e["reason"]) for f, e in doc["families"].items() if not e["comparable"]]
    for family, reason in blocked:
        lines.append(f"- NOT COMPARABLE {md_text(family)}: {md_text(reason)}")
    models = doc["models"]
    if models["added"] or models["removed"]:
        lines.append(
            f"- models added: {_names(models['added']) or 'none'}; removed: {_names(models['removed']) or 'none'}"
        )
    for change in models["changed"][:MAX_NAMES]:
        lines.append(
            f"- identity changed: {md_text(change['name'])} "
            f"({md_text(', '.join(change['fields'])) or 'fields unknown'}): not paired"
        )
    significant = [d for d in doc["deltas"] if d["significant"]]
    if significant:
        shown = "" if len(significant) <= MAX_DELTAS else f" — {MAX_DELTAS} of {len(significant)}"
        lines += ["", f"Significant changes (new − base, 95% CI, Holm p), worst first{shown}:"]
        for d in significant[:MAX_DELTAS]:
            mark = "▼" if d["direction"] == "regression" else "▲"
            flag = " ⚠" if d["beyond_threshold"] else ""
            lines.append(
                f"- {mark}{flag} {md_text(d['bucket'])} · {md_text(d['model'])}: {_num(d['base'])} → {_num(d['new'])} "
                f"(Δ {_num(d['diff'], signed=True)} "
                f"[{_num(d['ci'][0], signed=True)}, {_num(d['ci'][1], signed=True)}], "
                f"n={d['n']}, p={d['p_holm']:.3g})"
            )
    lines += gate_lines(doc)
    lines += sequential_lines(doc)
    lines += flip_lines(doc)
    decisions = doc["decisions"]
    if not decisions.get("compared"):
        lines += ["", f"Routing decisions not compared: {md_text(decisions.get('reason', ''))}"]
    elif decisions["changes"]:
        changes = decisions["changes"]
        lines += [
            "",
            f"Routing changes ({len(changes)}{'' if len(changes) <= MAX_DECISIONS else f', first {MAX_DECISIONS}'}):",
        ]
        for c in changes[:MAX_DECISIONS]:
            lines.append(
                f"- {md_text(c['id'])}: {md_text(c['base_model'] or '–')} → {md_text(c['new_model'] or '–')} "
                f"— {md_text(c['reason'])}"
            )
    untested = len(doc.get("untested") or [])
    lines += [
        "",
        (
            f"{doc['tested']} comparisons tested (paired items, same model and judge identity; min_n {doc['min_n']}), "
            f"{untested} too small to test. Details: compare.json."
        ),
    ]
    for note in doc.get("notes") or []:
        lines.append(f"Note: {md_text(note)}")
    return "\n".join(lines) + "\n"
