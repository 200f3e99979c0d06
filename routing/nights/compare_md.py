"""``compare.md``: a comparison short enough to paste into a chat message.

Bullets, not tables (chat clients do not render Markdown tables), at most ``MAX_DELTAS``
significant changes and ``MAX_DECISIONS`` routing changes — the rest is counted and left to
``compare.json``. Worst regressions first. Model and bucket names are untrusted text: newlines
are flattened and Markdown/HTML control characters escaped (:func:`routing.report.markdown.md_text`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routing.report.markdown import md_text

MAX_DELTAS = 10
MAX_DECISIONS = 6
MAX_NAMES = 6


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
