"""The summary ``python -m pool.calibrate --set criteria`` prints: one table row per judge and the panel
(plain verdicts), the probability-weighted side of each where its judge gave token logprobs, then each
row's key, counts, drift and store file. It reads only the stored entries (``judge.calibration.store``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from judge.contracts.criteria_items import KINDS

REASONS_SHOWN = 3  # the most frequent reasons for a missing verdict, per judge, in the summary
Row = tuple[str, str, Mapping[str, Any], str | None]  # (judge name, judge key, stored entry, store file or None)


def _num(value: float | None, width: int = 0) -> str:
    return f"{'–' if value is None else f'{value:.3f}':>{width}}"


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.3f}"


def _f1s(kinds: Mapping[str, Any] | None) -> str:
    return "–" if kinds is None else "/".join(_num(kinds[k]["f1"]) for k in KINDS)


def weighted_line(name: str, weighted: Mapping[str, Any] | None) -> str:
    """One judge's probability-weighted metrics on one line (``judge.calibration.probabilities``)."""
    if weighted is None:
        return f"  {name}: no token logprobs, plain verdicts only"
    auc, chosen, holistic = weighted["auc"], weighted["threshold"], weighted["holistic"]
    cut = "none chosen (runs cut at 0.5)" if chosen is None else f"{chosen['value']:.3f} (J {chosen['youden_j']:.3f})"
    return (
        f"  {name}: AUC of P(met) {_num(auc['all'])} ("
        + ", ".join(f"{k} {_num(auc[k])}" for k in KINDS)
        + f"); threshold {cut}; F1 {'/'.join(KINDS)} at 0.5 {_f1s(weighted['at_default'])}, "
        f"at the threshold {_f1s(weighted['at_threshold'])}; "
        f"ρ of expected coverage {_num(holistic['spearman'])} ({holistic['scored']} scored)"
    )


def render_criteria_text(header: str, rows: Sequence[Row]) -> str:
    """The table printed by the CLI (module doc)."""
    width = max(22, *(len(name) + 2 for name, _, _, _ in rows))
    lines = [
        header,
        f"  {'':<{width}}" + "".join(f"{kind:^21}" for kind in KINDS) + f"  {'holistic':>8}  {'answers judged':>17}",
        f"  {'judge':<{width}}"
        + f"{'P':>7}{'R':>7}{'F1':>7}" * len(KINDS)
        + f"  {'ρ':>8}  {'items':>7}  {'holistic':>8}",
    ]
    for name, _, entry, _ in rows:
        o = entry["metrics"]["overall"]
        cells = "".join(_num(o[k]["precision"], 7) + _num(o[k]["recall"], 7) + _num(o[k]["f1"], 7) for k in KINDS)
        items, holistic = f"{o['answers_judged']}/{o['answers']}", f"{o['holistic']['scored']}/{o['answers']}"
        lines.append(f"  {name:<{width}}{cells}  {_num(o['holistic']['spearman'], 8)}  {items:>7}  {holistic:>8}")
    lines.append("  probability-weighted (P(met) and expected coverage from token logprobs; threshold: Youden's J):")
    lines += [weighted_line(name, entry["metrics"]["overall"].get("weighted")) for name, _, entry, _ in rows]
    for name, key, entry, stored in rows:
        req = entry["requests"]
        lines.append(f"  {name}: key {key}; requests {req['calls']} sent, {req['cache_hits']} from the cache")
        counts = ", ".join(
            f"{k} {entry['metrics']['overall'][k]['judged']}/{entry['metrics']['overall'][k]['n']}" for k in KINDS
        )
        lines.append(f"    criteria judged: {counts}")
        why = Counter(reason for answer in entry["answers"] for reason in answer.get("reasons", {}).values())
        if why:
            lines.append(
                "    no verdict: "
                + "; ".join(f"{n} × {reason}" for reason, n in why.most_common(REASONS_SHOWN))
                + (f"; {len(why) - REASONS_SHOWN} other reason(s)" if len(why) > REASONS_SHOWN else "")
            )
        if "reliability" in entry:
            accuracy = ", ".join(f"{n} {a:.3f}" for n, a in entry["reliability"]["estimated_accuracy"].items())
            lines.append(
                f"    estimated accuracy (Dawid–Skene over {entry['reliability']['votes']} criteria): {accuracy}"
            )
        drift = entry.get("drift")
        if drift:
            d = drift["delta"]
            changed = drift["changed_criteria"]
            shown = f" ({', '.join(changed[:5])}{'…' if len(changed) > 5 else ''})" if changed else ""
            lines.append(
                f"    {'DRIFT' if drift['flagged'] else 'no drift'} vs {drift['against']}: "
                f"ΔF1 topic {_signed(d['topic_f1'])}, "
                f"warning {_signed(d['warning_f1'])}, forbidden {_signed(d['forbidden_f1'])}, "
                f"Δρ holistic {_signed(d['holistic_spearman'])}, ΔAUC {_signed(d.get('p_met_auc'))} "
                f"(threshold {drift['threshold']}); changed criteria: {len(changed)}{shown}"
            )
        lines.append(f"    stored in {stored}" if stored else "    not stored")
    return "\n".join(lines)
