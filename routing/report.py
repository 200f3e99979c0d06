"""``report.html``: one self-contained page a clinician-lead can read — no network, no script.

Everything is inline (one ``<style>`` block; bars and heatmap colours are CSS widths and
backgrounds), so the file opens from disk or an e-mail attachment. Every piece of model, dataset,
run or judge text passes through :func:`esc` (``html.escape`` with quotes), so a model named
``<script>…`` is shown as text, never run. Numbers are formatted, never interpolated raw.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.broad_areas import area_order
from eval.files import atomic_write_text
from eval.scores import FAMILIES
from routing.markdown import check_note, fmt
from routing.report_panel import judge_panel_section
from routing.stats import CI_METHOD_WORDS

# Sections filled after the build (a run's comparison with the night before, the trends), in page
# order; each sits between ``<!-- medpool:NAME -->`` and ``<!-- /medpool:NAME -->``. Model text
# inside is escaped, so it can never contain a marker.
SPLICED_SECTIONS = ("since-last-night", "trends")

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI","Noto Sans",sans-serif;margin:24px auto;max-width:1200px;color:#1d232a;padding:0 16px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:32px}h3{font-size:15px;margin:18px 0 6px}
table{border-collapse:collapse;margin:6px 0 14px}th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:middle}
th{background:#f3f5f7;font-weight:600}td.num{text-align:right;font-variant-numeric:tabular-nums}
.bar{position:relative;width:180px;height:12px;background:#eef1f4;border-radius:2px}
.bar .ci{position:absolute;top:3px;height:6px;background:#7aa7d8;border-radius:2px}
.bar .pt{position:absolute;top:0;width:2px;height:12px;background:#0b3d75}
.muted{color:#6a737d}.tag{display:inline-block;padding:0 6px;border-radius:8px;font-size:12px}
.ok{background:#dcf5e3}.tie{background:#fff3c4}.none{background:#f3d6d6}.small{font-size:12px}
td.heat{text-align:center;min-width:64px}
"""


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def table(head: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table from already-escaped cell HTML (``head`` is escaped here)."""
    head_html = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(cells) + "</tr>" for cells in rows)
    return f'<table class="{esc(cls)}"><thead><tr>{head_html}</tr></thead><tbody>{body}</tbody></table>'


def td(text: Any, num: bool = False) -> str:
    return f'<td class="num">{esc(text)}</td>' if num else f"<td>{esc(text)}</td>"


def pct(x: float, lo: float, hi: float) -> float:
    return 0.0 if hi <= lo else max(0.0, min(100.0, 100.0 * (x - lo) / (hi - lo)))


def ci_bar(stat: dict[str, Any] | None, lo: float = 0.0, hi: float = 1.0) -> str:
    if not stat or stat.get("value") is None:
        return "<td></td>"
    v, (a, b) = stat["value"], stat["ci"]
    a, b = (v if a is None else a), (v if b is None else b)
    left, right = pct(a, lo, hi), pct(b, lo, hi)
    return (
        f'<td><div class="bar"><div class="ci" style="left:{left:.1f}%;width:{max(right - left, 0.5):.1f}%"></div>'
        f'<div class="pt" style="left:{pct(v, lo, hi):.1f}%"></div></div></td>'
    )


def ci_text(stat: dict[str, Any] | None, digits: int = 3) -> str:
    if not stat or stat.get("value") is None:
        return "–"
    return f"{fmt(stat['value'], digits)} [{fmt(stat['ci'][0], digits)}, {fmt(stat['ci'][1], digits)}]"


def route_tag(route: dict[str, Any]) -> str:
    served = f" → {esc(route['model'])} (served by {esc(route.get('served_by'))})" if route.get("model") else ""
    if route.get("insufficient_data"):
        return f'<span class="tag none">insufficient data</span>{served} <span class="small muted">{esc(route.get("reason", ""))}</span>'
    if not route.get("routable"):
        return f'<span class="tag none">not routable</span>{served} <span class="small muted">{esc(route.get("reason", ""))}</span>'
    if route.get("decisive"):
        return f'<span class="tag ok">{esc(route["tied_top"][0])}</span>'
    return (
        '<span class="tag tie">tied</span> '
        + esc(", ".join(route["tied_top"]))
        + f' <span class="small muted">no model shown better; tie rule picks {esc(route.get("model"))}</span>'
    )


def runs_section(leaderboard: dict[str, Any], infra: dict[str, dict[str, int]]) -> str:
    rows = [
        [
            td(r["run_id"]),
            td(r["created_at"]),
            td(r["pool_fingerprint"] or "–"),
            td(r["data_fingerprint"] or "–"),
            td(r["dir"]),
        ]
        for r in leaderboard["runs"]
    ]
    out = [
        '<h2 id="runs">Runs</h2>',
        table(["run", "created", "pool fingerprint", "data fingerprint", "directory"], rows),
    ]
    params = leaderboard["parameters"]
    out.append('<p class="small muted">' + esc(", ".join(f"{k}={v}" for k, v in params.items())) + "</p>")
    families = [f for f in FAMILIES if any(f in per for per in infra.values())]
    out.append("<h3>Infra errors (excluded from every statistic)</h3>")
    out.append(
        table(
            ["model", *families, "total"],
            (
                [td(model)] + [td(per.get(f, 0), True) for f in families] + [td(sum(per.values()), True)]
                for model, per in sorted(infra.items())
            ),
        )
    )
    return "\n".join(out)


def routing_section(manifest: dict[str, Any]) -> str:
    default, orch = manifest["default"], manifest["orchestrator"]
    out = [
        '<h2 id="routing">Routing manifest</h2>',
        f"<p>Default model (buckets no parent serves): <b>{esc(default.get('model') or '–')}</b>"
        + ("" if default.get("decisive") or not default.get("model") else " (tie rule: no model shown better)")
        + ". "
        f"Orchestrator: <b>{esc(orch.get('model') or '–')}</b>"
        + (f" (tied with {esc(', '.join(orch['tied_top'][1:]))})" if len(orch.get("tied_top", [])) > 1 else "")
        + (f" — {esc(orch.get('reason', ''))}" if orch.get("reason") else "")
        + ".</p>",
    ]
    out += [
        f'<p class="small muted">Not nominated as orchestrator: {esc(c["model"])} — {esc(c["reason"])}</p>'
        for c in orch.get("not_nominated", [])
    ]
    rows = []
    for bucket_id, route in manifest["buckets"].items():
        cands = "; ".join(
            f"{c['model']} {fmt(c['score'])} [{fmt(c['ci'][0])}, {fmt(c['ci'][1])}] n={c['n']}"
            for c in route["candidates"]
        )
        rows.append([td(bucket_id), f"<td>{route_tag(route)}</td>", td(cands or "–")])
    out.append(table(["bucket", "route", "candidates (score [95% CI], n)"], rows))
    models = manifest["models"]
    out.append("<h3>Models</h3>")
    out.append(
        table(
            ["model", "backend", "answered", "infra errors", "median latency (s)", "median tokens"],
            (
                [
                    td(m),
                    td(p["identity"].get("backend", "–")),
                    td(p["answered"], True),
                    td(p["infra_errors"], True),
                    td(fmt(p["median_latency_s"], 2), True),
                    td(fmt(p["median_completion_tokens"], 0), True),
                ]
                for m, p in models.items()
            ),
        )
    )
    return "\n".join(out)


def validation_section(manifest: dict[str, Any]) -> str:
    """Routed vs best single model vs oracle on held-out items, per family (the manifest's ``validation``)."""
    validation = manifest.get("validation")
    if not validation:
        return ""
    out = [
        '<h2 id="validation">Does routing pay? Cross-validated routing</h2>',
        (
            f'<p class="small muted">{esc(validation["k"])}-fold cross-validation over items (seed {esc(validation["seed"])}): '
            "the manifest is rebuilt without each fold and every held-out item is sent to the model it names for the "
            "item's bucket (else its fallback), scored with that model's actual score on the item. Best single: the model "
            "with the highest mean on the other folds. Oracle: the best score any model got on the item. Lift = routed − "
            "best single; gap recovered = lift / (oracle − best single), 1 = as good as the oracle, 0 = no better than one "
            "model (RouteLLM's performance gap recovered). Means over items where both the routed and the best single model "
            "have a score; 95% CIs by bootstrap over those items.</p>"
        ),
    ]

    def verdict(lift: dict[str, Any]) -> str:
        lo, hi = lift["ci"]
        if lo is None or hi is None:
            return '<td><span class="tag none">no data</span></td>'
        if lo > 0:
            return '<td><span class="tag ok">routing pays</span></td>'
        if hi < 0:
            return '<td><span class="tag none">routing loses</span></td>'
        return '<td><span class="tag tie">no significant difference</span></td>'

    rows = []
    for family, v in validation["families"].items():
        gap = v["gap_recovered"]
        gap_cell = td(ci_text(gap), True) if gap["value"] is not None else td(f"– ({gap.get('reason', 'no data')})")
        missing = v["missing"]
        rows.append(
            [
                td(family),
                td(f"{v['evaluated']} / {v['items']}", True),
                td(ci_text(v["routed"]), True),
                td(ci_text(v["best_single"]), True),
                td(", ".join(f"{m} ×{n}" for m, n in v["best_single_models"].items()) or "–"),
                td(ci_text(v["oracle"]), True),
                td(ci_text(v["lift"]), True),
                gap_cell,
                verdict(v["lift"]),
                td(f"{missing['no_route']} / {missing['routed_unscored']} / {missing['best_single_unscored']}", True),
                td(", ".join(f"{s} {n}" for s, n in v["route_sources"].items()) or "–"),
            ]
        )
    out.append(
        table(
            [
                "family",
                "evaluated / items",
                "routed [95% CI]",
                "best single [95% CI]",
                "best single (folds)",
                "oracle [95% CI]",
                "lift [95% CI]",
                "gap recovered [95% CI]",
                "verdict",
                "missing: no route / routed unscored / best unscored",
                "routed via",
            ],
            rows,
            "validation",
        )
    )
    return "\n".join(out)


def family_section(family: str, buckets: Sequence[dict[str, Any]]) -> str:
    out = [f'<h2 id="family-{esc(family)}">{esc(family)}</h2>']
    for bucket in buckets:
        primary = bucket["primary"]
        extra = [
            m
            for m in (
                "pass_rate",
                "judge_pass_rate",
                "param_score",
                "safety",
                "accuracy",
                "safety_floor_rate",
                "unsupported_rate",
            )
            if m != primary and any(m in c["metrics"] for c in bucket["cells"])
        ]
        out.append(
            f'<h3>{esc(bucket["kind"])}: {esc(bucket["name"])} <span class="small muted">{esc(bucket["items"])} items, '
            f"{esc(', '.join(bucket['gold_types']))}</span></h3>"
        )
        out += [f'<p class="small muted">{esc(line)}</p>' for line in check_note(bucket) if line]
        rows = (
            [td(c["model"]), td(c["n"], True), ci_bar(c["primary"]), td(ci_text(c["primary"]), True)]
            + [td(ci_text(c["metrics"].get(m)), True) for m in extra]
            + [td(c["infra_errors"], True)]
            for c in bucket["cells"]
        )
        out.append(table(["model", "n", primary, "value [95% CI]", *extra, "infra"], rows, "board"))
    return "\n".join(out)


def objective_section(leaderboard: dict[str, Any]) -> str:
    """Objective checks vs the judge on the same answers, and DR accuracy beside the open answer."""
    checks, pairs = leaderboard.get("checks") or [], leaderboard.get("decision_recognition") or []
    if not checks and not pairs:
        return ""
    out = ['<h2 id="objective">Objective checks and decision recognition</h2>']
    if checks:
        out.append(
            '<p class="small muted">The check (SQL executed, API call parsed) ranks these tasks; the judge read the same '
            "answers. Agreement: share of answers where the check's pass and the judge's pass say the same; "
            "Cohen's κ (– below 5 answers).</p>"
        )
        rows = (
            [
                td(e["bucket"]),
                td(e["kind"]),
                td(m["model"]),
                td(m["n_checked"], True),
                td(ci_text(m["check_pass_rate"]), True),
                td(m["n_both"], True),
                td(ci_text(m["judge_pass_rate"]), True),
                td(fmt(m["agreement"]), True),
                td(fmt(m["kappa"]), True),
            ]
            for e in checks
            for m in e["models"]
        )
        out.append(
            table(
                [
                    "task",
                    "check",
                    "model",
                    "checked",
                    "check pass [95% CI]",
                    "judged",
                    "judge pass [95% CI]",
                    "agreement",
                    "κ",
                ],
                rows,
                "checks",
            )
        )
    if pairs:
        out.append(
            '<p class="small muted">Decision recognition: the same items asked as a choice among the gold and its '
            "nearest labels (DR accuracy) and openly (the source task's per-item score).</p>"
        )
        rows = (
            [
                td(e["task"]),
                td(f"{e['source_task']} ({e['source_statistic']})"),
                td(m["model"]),
                td(m["n"], True),
                td(ci_text(m["dr_accuracy"]), True),
                td(ci_text(m["source_score"]), True),
            ]
            for e in pairs
            for m in e["models"]
        )
        out.append(
            table(
                ["DR task", "source task", "model", "items", "DR accuracy [95% CI]", "source score [95% CI]"],
                rows,
                "dr",
            )
        )
    return "\n".join(out)


def frontier_section(frontier: Mapping[str, Sequence[Mapping[str, Any]]] | None) -> str:
    """Quality vs cost per family (routing.frontier); shown when at least one model has a price."""
    if not frontier or not any(p["mean_cost"] is not None for points in frontier.values() for p in points):
        return ""
    out = [
        '<h2 id="cost">Quality vs cost</h2>',
        '<p class="small muted">Per family: mean score and mean cost per item at the pool file\'s prices. ★ marks the '
        "frontier — no other priced model is at least as good and at most as dear. Point estimates: the family "
        "decisions above say which differences are significant. – : no price.</p>",
    ]
    for family, points in frontier.items():
        rows = (
            [
                td(("★ " if p["on_frontier"] else "") + p["model"]),
                td(p["n"], True),
                td(fmt(p["score"]), True),
                td("–" if p["mean_cost"] is None else f"{p['mean_cost']:.6g}", True),
                td(fmt(p["median_latency_s"], 2), True),
            ]
            for p in points
        )
        out.append(
            f"<h3>{esc(family)}</h3>"
            + table(["model", "items", "score", "cost per item", "median latency (s)"], rows, "frontier")
        )
    return "\n".join(out)


HEATMAP_KINDS = {
    "broad_area": "broad area",
    "system": "system",
    "domain": "domain",
}  # the specialty levels, widest first


def heatmap_section(buckets: Sequence[dict[str, Any]], min_n: int) -> str:
    """Specialty × model: the broad areas first (内科, 精神科, ...: the rollups the med-agent-verifier
    README's leaderboard leads with), then the domains and their systems as the leaderboard lists them."""
    specialty = [b for b in buckets if b["family"] == "specialty" and b["kind"] in HEATMAP_KINDS]
    areas = sorted((b for b in specialty if b["kind"] == "broad_area"), key=lambda b: area_order(b["name"]))
    shown = areas + [b for b in specialty if b["kind"] != "broad_area"]
    if not shown:
        return ""
    models = sorted({c["model"] for b in shown for c in b["cells"]})
    rows = []
    for bucket in shown:
        by_model = {c["model"]: c for c in bucket["cells"]}
        cells = [td(f"{HEATMAP_KINDS[bucket['kind']]}: {bucket['name']}")]
        for model in models:
            cell = by_model.get(model)
            value = cell["primary"]["value"] if cell and cell["primary"] else None
            if value is None:
                cells.append('<td class="heat muted">–</td>')
                continue
            thin = cell["n"] < min_n
            colour = "#eeeeee" if thin else f"hsl({120 * value:.0f},65%,{88 - 18 * abs(value - 0.5):.0f}%)"
            cells.append(
                f'<td class="heat" style="background:{colour}" title="{esc(model)} n={cell["n"]}">'
                f'{esc(fmt(value, 2))}<br><span class="small muted">n={esc(cell["n"])}</span></td>'
            )
        rows.append(cells)
    note = f'<p class="small muted">Grey: fewer than {esc(min_n)} scored items (not routable on its own).</p>'
    return '<h2 id="heatmap">Specialty × model</h2>' + note + table(["specialty", *models], rows, "heatmap")


def pairwise_section(scopes: Sequence[dict[str, Any]]) -> str:
    out = [
        '<h2 id="pairwise">Pairwise ratings (per family)</h2>',
        (
            '<p class="small muted">Per item, the higher score wins a battle and equal scores tie. Bradley–Terry on the Elo '
            "scale with item-bootstrap 95% CIs; rank = 1 + models whose lower bound exceeds this upper bound. Online Elo: "
            "median and 95% interval over shuffled battle orders.</p>"
        ),
    ]
    for scope in scopes:
        if scope["level"] != "family":
            continue
        out.append(f"<h3>{esc(scope['scope'])}</h3>")
        if "bradley_terry" not in scope:
            out.append(f'<p class="muted">{esc(scope.get("skipped", "no battles"))}</p>')
            continue
        bt, elo, wr = scope["bradley_terry"]["ratings"], scope["elo"]["ratings"], scope["win_rate"]
        bounds = [x for r in bt.values() for x in r["ci"] if x is not None] or [1000.0]
        lo, hi = min(bounds) - 10, max(bounds) + 10
        rows = (
            [
                td(bt[m]["rank"], True),
                td(m),
                td(fmt(bt[m]["rating"], 0), True),
                ci_bar({"value": bt[m]["rating"], "ci": bt[m]["ci"]}, lo, hi),
                td(f"[{fmt(bt[m]['ci'][0], 0)}, {fmt(bt[m]['ci'][1], 0)}]", True),
                td(f"{fmt(elo[m]['median'], 0)} [{fmt(elo[m]['ci'][0], 0)}, {fmt(elo[m]['ci'][1], 0)}]", True),
                td(fmt(wr["overall"][m]), True),
            ]
            for m in scope["models"]
        )
        out.append(
            f'<p class="small">{esc(scope["items"])} items, {esc(scope["battles"])} battles, {esc(scope["ties"])} ties</p>'
        )
        out.append(table(["rank", "model", "BT rating", "", "95% CI", "Elo median [95%]", "win rate"], rows, "ratings"))
        matrix_rows = (
            [td(m)] + [td("·" if i == j else fmt(wr["matrix"][i][j], 2), True) for j in range(len(scope["models"]))]
            for i, m in enumerate(scope["models"])
        )
        out.append(table(["row beats column", *scope["models"]], matrix_rows, "matrix"))
    return "\n".join(out)


def hard_section(hard: dict[str, Any]) -> str:
    method = hard["method"]
    cap = f", at most {method['cap']}" if method.get("cap") is not None else ""
    out = [
        '<h2 id="hard">Full vs Hard</h2>',
        (
            f'<p class="small muted">{esc(len(hard["item_ids"]))} hard items: per (family, task) the hardest '
            f"{esc(round(100 * method['fraction']))}% (small groups: up to {esc(method['min_items'])} items, never more than half{esc(cap)}) by "
            f"{esc(method['difficulty'])} (λ = {esc(method['lam'])}); score: {esc(method['score'])}. "
            f"Model set: {esc(', '.join(hard['models']))}.</p>"
        ),
    ]
    rows = (
        [
            td(model),
            td(e["macro"]["tasks"], True),
            td(fmt(e["macro"]["full"]), True),
            td(fmt(e["macro"]["hard"]), True),
            td(fmt(e["macro"]["gap"]), True),
        ]
        for model, e in sorted(hard["full_vs_hard"].items())
    )
    out.append(table(["model", "tasks", "full", "hard", "gap (full − hard)"], rows, "hard"))
    task_rows = (
        [
            td(t["task"]),
            td(t["family"]),
            td(t["score"]),
            td(t["items"], True),
            td(t["selected"], True),
            td(t["ties_at_cut"], True),
        ]
        for t in hard["tasks"].values()
    )
    out.append(table(["task", "family", "score", "items", "hard items", "ties at cut"], task_rows, "hard-tasks"))
    group_rows = (
        [
            td(t["task"]),
            td(t["family"]),
            td(model),
            td(e["n_full"], True),
            td(fmt(e["full"]), True),
            td(e["n_hard"], True),
            td(fmt(e["hard"]), True),
            td(fmt(e["gap"]), True),
        ]
        for group, t in hard["tasks"].items()
        for model in t["models"]
        if (e := hard["full_vs_hard"].get(model, {}).get("tasks", {}).get(group))
    )
    out.append(table(["task", "family", "model", "n full", "full", "n hard", "hard", "gap"], group_rows, "hard-groups"))
    return "\n".join(out)


def _cnt(counts: dict[str, Any], rates: dict[str, Any], key: str) -> str:
    rate = rates.get(key)
    return td(f"{counts.get(key, 0)} ({rate:.0%})" if rate is not None else "–", True)


def _behaviours(block: Mapping[str, Any] | None) -> str:
    """The judge's probe-behaviour labels of one model, most frequent first (``routing.reliability``)."""
    if not block or not block.get("available"):
        return "not available"
    counts = sorted(((k, v) for k, v in block["counts"].items() if v), key=lambda kv: -kv[1])
    missing = f", {block['unlabelled']} unlabelled" if block.get("unlabelled") else ""
    return " · ".join(f"{k} {v}" for k, v in counts) + f" (n={block['n']}{missing})"


def judge_reliability_section(reliability: dict[str, Any] | None) -> str:
    """The leaderboard's ``judge_reliability`` block (see :mod:`routing.reliability`): warnings first."""
    if not reliability:
        return ""
    th = reliability["thresholds"]
    out = [
        '<h2 id="judge-reliability">Judge reliability</h2>',
        (
            f'<p class="small muted">From the runs\' own data. Length bias: Spearman ρ of answer length (characters) and judged '
            f"value, warned at |ρ| ≥ {esc(th['length_bias_rho'])} (n ≥ {esc(th['min_n'])}); length-controlled = each answer's "
            "residual on ln(1 + length), fitted over all of the judge's answers, added back to its mean. Family conflict: "
            "candidate and judge share a model family (self-preference risk). Contamination-resistant: scored items in "
            "orchestration and robustness, which public leaderboards cannot have memorised. Agreement: the same answers judged "
            f"again on a perturbed prompt (pool.run --rejudge-sample N), warned at Cohen's κ &lt; {esc(th['kappa_min'])}. "
            "Context-appropriate: share of the judge's context-awareness labels on criteria answers that are "
            "“appropriate” (vs overconfident / overhedged). Probe behaviour: the judge's label of what each probe answer "
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
    ladder = [
        [
            td(j),
            td(v["parse_ladder"]["n"], True),
            *(
                _cnt(v["parse_ladder"]["counts"], v["parse_ladder"]["rates"], k)
                for k in ("strict", "repaired", "patterns", "reasked", "failed", "call_failed")
            ),
            td("–" if v["length"]["rho"] is None else f"{v['length']['rho']:+.2f} (n={v['length']['n']})", True),
        ]
        for j, v in reliability["judges"].items()
    ]
    out.append("<h3>Parse ladder per judge</h3>")
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
            f'<p class="small muted">Share of each judge\'s verdicts carrying a flag; "flagged" leaves out parser notes, '
            f"warned above {esc(th.get('flagged_rate_max', 0.5))}. Dropped: claims about the answer (injection_attempt) that a "
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


def render_report(
    leaderboard: dict[str, Any],
    pairwise: dict[str, Any],
    hard: dict[str, Any],
    manifest: dict[str, Any],
    infra: dict[str, dict[str, int]],
    sections: Mapping[str, str] | None = None,
) -> str:
    """The whole page as a string (pure: dicts in, HTML out).

    ``sections``: already-rendered HTML per name in :data:`SPLICED_SECTIONS` (see
    :mod:`routing.report_history`), placed after the navigation; absent ones leave an empty marked
    block that :func:`splice_section` can fill later.
    """
    families = leaderboard["families"]
    all_buckets = [b for f in FAMILIES for b in families.get(f, [])]
    nav = " · ".join(
        f'<a href="#{esc(a)}">{esc(t)}</a>'
        for a, t in [
            ("runs", "runs"),
            ("routing", "routing"),
            ("validation", "routing validation"),
            *[(f"family-{f}", f) for f in FAMILIES if f in families],
            *(
                [("objective", "objective checks")]
                if leaderboard.get("checks") or leaderboard.get("decision_recognition")
                else []
            ),
            *([("cost", "quality vs cost")] if frontier_section(leaderboard.get("cost_frontier")) else []),
            ("heatmap", "specialty heatmap"),
            ("pairwise", "pairwise"),
            ("hard", "full vs hard"),
            ("judge-reliability", "judge reliability"),
        ]
    )
    body = [
        "<h1>medpool — model pool report</h1>",
        (
            f'<p class="muted">Generated {esc(leaderboard["generated_at"])}. Families are reported side by side and never '
            f"blended. Every value carries its n and a 95% confidence interval (bar: CI, tick: value); "
            f"{esc(interval_methods_text(leaderboard))}.</p>"
        ),
        f"<p>{nav}</p>",
        *[marked(name, (sections or {}).get(name, "")) for name in SPLICED_SECTIONS],
        runs_section(leaderboard, infra),
        routing_section(manifest),
        validation_section(manifest),
        *[family_section(f, families[f]) for f in FAMILIES if f in families],
        objective_section(leaderboard),
        frontier_section(leaderboard.get("cost_frontier")),
        heatmap_section(all_buckets, leaderboard["parameters"]["min_n"]),
        pairwise_section(pairwise["scopes"]),
        hard_section(hard),
        judge_reliability_section(leaderboard.get("judge_reliability")),
        judge_panel_section(leaderboard.get("judge_panel")),
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>medpool report</title><style>{CSS}</style></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def interval_methods_text(leaderboard: Mapping[str, Any]) -> str:
    """Which interval rules this leaderboard's cells use, with their counts, in words."""
    counts: dict[str, int] = {}
    stack: list[Any] = [leaderboard]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            method = node.get("ci_method")
            if isinstance(method, str):
                counts[method] = counts.get(method, 0) + 1
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    if not counts:
        return "no interval was computed"
    used = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return "intervals by " + "; ".join(f"{CI_METHOD_WORDS.get(m, m)}: {n} value{'s' * (n != 1)}" for m, n in used)


def marked(name: str, section_html: str) -> str:
    """``section_html`` between the start and end markers of section ``name``."""
    return f"<!-- medpool:{name} -->{section_html}<!-- /medpool:{name} -->"


def splice_section(page: str, name: str, section_html: str) -> str:
    """``page`` with section ``name`` replaced by ``section_html`` (pure).

    A page without the section's markers (written before they existed) gets it before the runs
    section, or else before ``</body>``; spliced sections keep :data:`SPLICED_SECTIONS` order.
    """
    start, end = f"<!-- medpool:{name} -->", f"<!-- /medpool:{name} -->"
    i = page.find(start)
    j = page.find(end, i + len(start)) if i >= 0 else -1
    if i >= 0 and j >= 0:
        return page[:i] + marked(name, section_html) + page[j + len(end) :]
    later = (
        [f"<!-- medpool:{n} -->" for n in SPLICED_SECTIONS[SPLICED_SECTIONS.index(name) + 1 :]]
        if name in SPLICED_SECTIONS
        else []
    )
    anchors = [*later, '<h2 id="runs">', "</body>"]
    at = min((k for k in (page.find(a) for a in anchors) if k >= 0), default=len(page))
    return page[:at] + marked(name, section_html) + "\n" + page[at:]


def update_report_file(path: Path, sections: Mapping[str, str]) -> bool:
    """Splice ``sections`` (name -> HTML) into the report at ``path`` atomically; False when there is no report."""
    path = Path(path)
    try:
        page = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    for name, section_html in sections.items():
        page = splice_section(page, name, section_html)
    atomic_write_text(path, page)
    return True
