"""The report's "Routing manifest" and "Does routing pay?" sections (``routing_manifest.yaml``)."""

from __future__ import annotations

from typing import Any

from routing.report.html import ci_text, esc, table, td
from routing.report.markdown import fmt


def route_tag(route: dict[str, Any]) -> str:
    served = f" → {esc(route['model'])} (served by {esc(route.get('served_by'))})" if route.get("model") else ""
    reason = f'<span class="small muted">{esc(route.get("reason", ""))}</span>'
    if route.get("insufficient_data"):
        return f'<span class="tag none">insufficient data</span>{served} {reason}'
    if not route.get("routable"):
        return f'<span class="tag none">not routable</span>{served} {reason}'
    if route.get("chosen_by") == "judged_battles":
        judges = ", ".join(
            f"{j['judge']} (position consistency {fmt(j.get('consistent'))})" for j in route["judged"]["judges"]
        )
        return (
            f'<span class="tag ok">{esc(route["model"])}</span> <span class="small muted">decided by judged battles '
            f"({esc(route['judged']['n_battles'])} battles; judged by {esc(judges)}); the scores tied "
            f"{esc(', '.join(route['tied_top']))}</span>"
        )
    if route.get("decisive"):
        return f'<span class="tag ok">{esc(route["tied_top"][0])}</span>'
    return (
        '<span class="tag tie">tied</span> '
        + esc(", ".join(route["tied_top"]))
        + f' <span class="small muted">no model shown better; tie rule picks {esc(route.get("model"))}</span>'
    )


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
            f'<p class="small muted">{esc(validation["k"])}-fold cross-validation over items '
            f"(seed {esc(validation['seed'])}): "
            "the manifest is rebuilt without each fold and every held-out item is sent to the model it names for the "
            "item's bucket (else its fallback), scored with that model's actual score on the item. "
            "Best single: the model with the highest mean on the other folds. "
            "Oracle: the best score any model got on the item. Lift = routed − best single; "
            "gap recovered = lift / (oracle − best single), 1 = as good as the oracle, 0 = no better than one "
            "model (RouteLLM's performance gap recovered). "
            "Means over items where both the routed and the best single model "
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
