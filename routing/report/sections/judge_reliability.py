"""The report's "Judge reliability" section: the ``judge_reliability`` block (:mod:`routing.judges.reliability`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routing.report.html import esc, table, td
from routing.report.markdown import fmt, variants_text


def _cnt(counts: dict[str, Any], rates: dict[str, Any], key: str) -> str:
    rate = rates.get(key)
    return td(f"{counts.get(key, 0)} ({rate:.0%})" if rate is not None else "–", True)


def _behaviours(block: Mapping[str, Any] | None) -> str:
    """The judge's probe-behaviour labels of one model, most frequent first (``routing.judges.reliability``)."""
    if not block or not block.get("available"):
        return "not available"
    counts = sorted(((k, v) for k, v in block["counts"].items() if v), key=lambda kv: -kv[1])
    missing = f", {block['unlabelled']} unlabelled" if block.get("unlabelled") else ""
    return " · ".join(f"{k} {v}" for k, v in counts) + f" (n={block['n']}{missing})"


def judge_reliability_section(reliability: dict[str, Any] | None) -> str:
    """The leaderboard's ``judge_reliability`` block (see :mod:`routing.judges.reliability`): warnings first."""
    if not reliability:
        return ""
    th = reliability["thresholds"]
    out = [
        '<h2 id="judge-reliability">Judge reliability</h2>',
        (
            '<p class="small muted">From the runs\' own data. '
            "Length bias: Spearman ρ of answer length (characters) and judged value, "
            f"warned at |ρ| ≥ {esc(th['length_bias_rho'])} (n ≥ {esc(th['min_n'])}); "
            "length-controlled = each answer's residual on ln(1 + length), fitted over all of the judge's answers, "
            "added back to its mean. Family conflict: "
            "candidate and judge share a model family (self-preference risk). Contamination-resistant: scored items in "
            "orchestration, robustness and live, which public leaderboards cannot have memorised. "
            "Agreement: the same answers judged again on a perturbed prompt (pool.run --rejudge-sample N), "
            f"warned at Cohen's κ &lt; {esc(th['kappa_min'])}. "
            "Context-appropriate: share of the judge's context-awareness labels on criteria answers that are "
            "“appropriate” (vs overconfident / overhedged). "
            "Probe behaviour: the judge's label of what each probe answer "
            "did (abstained, refuted, complied, fabricated).</p>"
        ),
    ]
    warnings = reliability["warnings"]
    out.append(
        "<ul>"
        + "".join(f'<li><span class="tag none">{esc(w["kind"])}</span> {esc(w["message"])}</li>' for w in warnings)
        + "</ul>"
        if warnings
        else '<p><span class="tag ok">no threshold crossed</span></p>'
    )
    rows = []
    for model, m in reliability["models"].items():
        conflict = "; ".join(
            f"{j}: {'self' if c['self_judged'] else '/'.join(c['families'])}"
            for j, c in m["family_conflict"]["judges"].items()
        )
        res, ctx = m["contamination_resistant"], m["ctx_appropriate"]
        common = [
            td(conflict or "none"),
            td(f"{res['n']}/{res['scored']}" + (f" ({res['share']:.0%})" if res["share"] is not None else ""), True),
            td(f"{fmt(ctx['rate'], 2)} (n={ctx['n']})" if ctx["available"] else "not available"),
            td(_behaviours(m.get("probe_behavior"))),
        ]
        for judge, v in (m["length"] or {"–": None}).items():
            rho = "–" if v is None or v["rho"] is None else f"{v['rho']:+.2f}"
            rows.append(
                [
                    td(model),
                    td(judge),
                    td(v["n"] if v else 0, True),
                    td(rho, True),
                    td(fmt(v["raw_mean"]) if v else "–", True),
                    td(fmt(v["controlled_mean"]) if v else "–", True),
                    *common,
                ]
            )
    out.append(
        table(
            [
                "model",
                "judge",
                "judged (length known)",
                "length ρ",
                "raw mean",
                "length-controlled",
                "family conflict",
                "contamination-resistant",
                "context-appropriate",
                "probe behaviour",
            ],
            rows,
            "reliability-models",
        )
    )
    with_variants = any(v.get("score_variants") for v in reliability["judges"].values())
    ladder = [
        [
            td(j),
            td(v["parse_ladder"]["n"], True),
            *(
                _cnt(v["parse_ladder"]["counts"], v["parse_ladder"]["rates"], k)
                for k in ("strict", "repaired", "patterns", "reasked", "failed", "call_failed")
            ),
            td("–" if v["length"]["rho"] is None else f"{v['length']['rho']:+.2f} (n={v['length']['n']})", True),
            *([td(variants_text(v.get("score_variants")))] if with_variants else []),
        ]
        for j, v in reliability["judges"].items()
    ]
    out.append("<h3>Parse ladder per judge</h3>")
    if with_variants:
        out.append(
            '<p class="small muted">Scores: how many of the judge\'s values are probability-weighted (the expectation '
            "over its token probabilities), argmax (its most likely labels) or mixed (a panel whose members "
            "differ).</p>"
        )
    out.append(
        table(
            [
                "judge",
                "verdicts",
                "strict",
                "repaired",
                "patterns",
                "re-asked",
                "failed",
                "call failed",
                "length ρ (all models)",
                *(["scores (weighted / argmax)"] if with_variants else []),
            ],
            ladder,
            "reliability-judges",
        )
    )
    flag_rows = [
        [
            td(j),
            td(f["n"], True),
            td(f"{f['flagged']} ({f['flagged_rate']:.0%})" if f["flagged_rate"] is not None else "–", True),
            td(", ".join(f"{k} {c} ({f['rates'][k]:.0%})" for k, c in f["counts"].items()) or "none"),
            td(", ".join(f"{k} {c}" for k, c in f["dropped"].items()) or "none"),
        ]
        for j, v in reliability["judges"].items()
        if (f := v.get("flags"))
    ]
    if flag_rows:
        out.append("<h3>Flags per judge</h3>")
        out.append(
            '<p class="small muted">Share of each judge\'s verdicts carrying a flag; '
            '"flagged" leaves out parser notes, '
            f"warned above {esc(th.get('flagged_rate_max', 0.5))}. "
            "Dropped: claims about the answer (injection_attempt) that a "
            "deterministic check of the answer did not confirm.</p>"
        )
        out.append(
            table(["judge", "verdicts", "flagged", "flags", "dropped (not confirmed)"], flag_rows, "reliability-flags")
        )
    agree = [
        [
            td(j),
            td(", ".join(a["perturbation"])),
            td(f"{a['n']}/{a['sampled']}", True),
            td(fmt(a["kappa_pass"], 2), True),
            td(fmt(a["pass_agreement"], 2), True),
            td(fmt(a["spearman_total"]["rho"], 2), True),
            td(fmt(a["mean_abs_total_diff"], 1), True),
        ]
        for j, v in reliability["judges"].items()
        if (a := v["agreement"])
    ]
    if agree:
        out.append("<h3>Agreement on re-judging</h3>")
        out.append(
            table(
                [
                    "judge",
                    "perturbation",
                    "pairs / sampled",
                    "κ pass/fail",
                    "pass agreement",
                    "Spearman ρ totals",
                    "mean |Δ total|",
                ],
                agree,
                "reliability-agreement",
            )
        )
    calib = []
    for judge, v in reliability["judges"].items():
        for c in v["calibration"]:
            o, d = c["overall"], c["drift"]
            drift = (
                "–"
                if not d
                else ("DRIFT " if d["flagged"] else "stable ") + f"ΔF1 {fmt(d['delta']['f1'], 2)} vs {d['against']}"
            )
            calib.append(
                [
                    td(judge),
                    td(c["calibrated_at"]),
                    td(f"{c['set']['claims']} claims, sha256 {str(c['set']['sha256'])[:12]}"),
                    td(f"{o['labelled']}/{o['n']}", True),
                    td(fmt(o["precision"]), True),
                    td(fmt(o["recall"]), True),
                    td(fmt(o["f1"]), True),
                    td(fmt(o["accuracy_3class"]), True),
                    td(", ".join(f"{t} {fmt(m['f1'], 2)}" for t, m in c["tiers"].items())),
                    td(drift),
                ]
            )
    if calib:
        out.append("<h3>Calibration on labelled claims (python -m pool.calibrate)</h3>")
        out.append(
            table(
                [
                    "judge",
                    "calibrated",
                    "set",
                    "labelled",
                    "P unsupported",
                    "R unsupported",
                    "F1 unsupported",
                    "3-class acc",
                    "F1 per tier",
                    "drift",
                ],
                calib,
                "reliability-calibration",
            )
        )
    if reliability["notes"]:
        out.append('<ul class="small muted">' + "".join(f"<li>{esc(n)}</li>" for n in reliability["notes"]) + "</ul>")
    return "\n".join(out)
