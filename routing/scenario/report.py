"""``reports/<domain>-<axis>-<date>.md``: the theory screen set against a run's measurements.

Sections: the candidates (tier, theory score, and each family's measured score with its interval side by
side — capability, specialty with its unsupported rate, orchestration — never blended into one "best");
theory order against measured order (ranks, Spearman's ρ, and each pair the two orders put the other
way round, *clear* when the measured intervals do not overlap); warnings (unsupported rate at or above
``unsupported_max``, orchestration below ``orchestration_min``); the ceiling references the best local
candidate is below; what was shortlisted but not measured, or measured but not shortlisted; the limits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

from scipy.stats import rankdata

from routing.judges.reliability import spearman
from routing.scenario.measured import Measure, Measured
from routing.screen.shortlist import Shortlist
from routing.stats.intervals import intervals_overlap

SHOWN_FAMILIES = ("capability", "specialty", "orchestration")
MIN_PAIRS = 3  # Spearman's ρ on two candidates is ±1 whatever they are
FEW = 5  # below this, one ρ in three (n = 3) or in twelve (n = 4) is ±1 by chance alone


@dataclass(frozen=True)
class Thresholds:
    unsupported_max: float = 0.2  # warn at or above
    orchestration_min: float = 0.5  # warn below


@dataclass(frozen=True)
class OrderRow:
    model: str
    theory: float
    theory_rank: float
    measured: Measure
    measured_rank: float


def order_rows(shortlist: Shortlist, measured: Mapping[str, Measured]) -> list[OrderRow]:
    """The candidates with a theory score and an order score, theory order first (rank 1 = best, ties averaged)."""
    both = [m for m in shortlist.scores if m in measured and measured[m].order is not None]
    if not both:
        return []
    theory = rankdata([-shortlist.scores[m] for m in both])
    seen = rankdata([-measured[m].order.value for m in both])  # type: ignore[union-attr]
    rows = [
        OrderRow(m, shortlist.scores[m], float(t), measured[m].order, float(s))  # type: ignore[arg-type]
        for m, t, s in zip(both, theory, seen, strict=True)
    ]
    return sorted(rows, key=lambda r: (r.theory_rank, r.model))


def disagreements(rows: Sequence[OrderRow]) -> list[str]:
    """Each pair the theory orders one way and the measurement the other (equal on either side: no claim)."""
    out = []
    for a, b in combinations(rows, 2):
        if a.theory == b.theory or a.measured.value == b.measured.value:
            continue
        if (a.theory > b.theory) != (a.measured.value > b.measured.value):
            high, low = (a, b) if a.theory > b.theory else (b, a)
            clear = not intervals_overlap((high.measured.lo, high.measured.hi), (low.measured.lo, low.measured.hi))
            out.append(
                f"theory puts **{high.model}** ({high.theory:.3f}) above **{low.model}** ({low.theory:.3f}); measured, "
                f"{low.model} {low.measured.value:.3f} is above {high.model} {high.measured.value:.3f}"
                + (" — a clear disagreement (the intervals do not overlap)" if clear else " (the intervals overlap)")
            )
    return out


def _cell(m: Measure | None) -> str:
    return "—" if m is None else m.shown()


def _candidates(shortlist: Shortlist, measured: Mapping[str, Measured]) -> list[str]:
    tier_of = {name: tier for tier, names in shortlist.tiers.items() for name in names}
    lines = [
        "| candidate | tier | theory score | capability | specialty | unsupported rate | orchestration |",
        "|---|---|---|---|---|---|---|",
    ]
    for model in sorted(measured, key=lambda m: (-shortlist.scores.get(m, -1.0), m)):
        m = measured[model]
        theory = f"{shortlist.scores[model]:.3f}" if model in shortlist.scores else "—"
        cells = [_cell(m.families.get(f)) for f in SHOWN_FAMILIES]
        lines.append(
            f"| {model} | {tier_of.get(model, 'not shortlisted')} | {theory} | {cells[0]} | {cells[1]} | "
            f"{_cell(m.unsupported)} | {cells[2]} |"
        )
    return lines


def _order(rows: Sequence[OrderRow], family: str, domain: str | None) -> list[str]:
    where = f"{family}" + (f", domain {domain}" if domain and family == "specialty" else "")
    if not rows:
        return [f"No shortlisted candidate was measured on {where}: nothing to compare (try `--family`)."]
    lines = [
        f"Measured on **{where}**. Rank 1 is the best; ties share the average rank.",
        "",
        "| candidate | theory score | theory rank | measured | measured rank | |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        flag = "" if r.theory_rank == r.measured_rank else "differs"
        lines.append(
            f"| {r.model} | {r.theory:.3f} | {r.theory_rank:g} | {r.measured.shown()} | {r.measured_rank:g} | {flag} |"
        )
    rho = spearman([r.theory for r in rows], [r.measured.value for r in rows], min_n=MIN_PAIRS)
    lines.append("")
    if rho["rho"] is None:
        lines.append(
            f"Spearman's ρ: not computed (n = {rho['n']}: it needs {MIN_PAIRS} or more candidates, and "
            "neither order all ties)."
        )
    else:
        few = f" With fewer than {FEW} candidates a ρ of ±1 comes easily: read the ranks." if rho["n"] < FEW else ""
        lines.append(f"Spearman's ρ = {rho['rho']:.3f} over n = {rho['n']} candidates (p = {rho['p_value']:.3g}).{few}")
    found = disagreements(rows)
    lines += ["", "Where they disagree:", ""] + ([f"- {d}" for d in found] or ["- nowhere: the orders agree."])
    return lines


def _warnings(measured: Mapping[str, Measured], t: Thresholds) -> list[str]:
    out = []
    for model in sorted(measured):
        m = measured[model]
        if m.unsupported is not None and m.unsupported.value >= t.unsupported_max:
            out.append(
                f"- **{model}**: unsupported rate {m.unsupported.shown()} ≥ {t.unsupported_max:g} — its specialty "
                "answers often make claims no source supports"
            )
        orchestration = m.families.get("orchestration")
        if orchestration is not None and orchestration.value < t.orchestration_min:
            out.append(
                f"- **{model}**: orchestration {orchestration.shown()} < {t.orchestration_min:g} — not a candidate "
                "for the orchestrator (routing, tool decisions)"
            )
    return out or ["- none."]


def _ceilings(shortlist: Shortlist, rows: Sequence[OrderRow], family: str) -> list[str]:
    if not shortlist.ceilings:
        return ["The shortlist names no ceiling reference."]
    if not rows:
        return ["No candidate measured on the order family: the ceiling references are not compared."]
    best = max(rows, key=lambda r: (r.measured.value, -r.theory_rank))
    lines = [
        f"Best local candidate on {family}: **{best.model}**, {best.measured.shown()}. Published scores are on "
        "their sources' own scales and items: read this as an indication, not a measurement.",
        "",
    ]
    for c in shortlist.ceilings:
        source = f"{c.title}" if c.title else c.source
        if c.published_score is None:
            lines.append(f"- {c.model} ({source}): no published score, not compared.")
        elif best.measured.hi < c.published_score:
            lines.append(f"- below **{c.model}**: published {c.published_score:g} ({source}), above the interval.")
        elif best.measured.value < c.published_score:
            lines.append(
                f"- perhaps below **{c.model}**: published {c.published_score:g} ({source}), inside the interval."
            )
        else:
            lines.append(f"- not below {c.model}: published {c.published_score:g} ({source}).")
    return lines


def _unmatched(shortlist: Shortlist, measured: Mapping[str, Measured], in_run: Sequence[str]) -> list[str]:
    tier_of = {name: tier for tier, names in shortlist.tiers.items() for name in names}
    lines = [
        f"- {name} ({tier_of.get(name, '?')}): shortlisted, no scored row in this run"
        for name in shortlist.scores
        if name not in measured
    ]
    lines += [f"- {name}: in the run, not on the shortlist" for name in in_run if name not in shortlist.scores]
    return lines or ["- none."]


def render_scenario(
    shortlist: Shortlist,
    measured: Mapping[str, Measured],
    in_run: Sequence[str],
    *,
    run_label: str,
    order_family: str,
    thresholds: Thresholds,
) -> str:
    """The report (module docstring)."""
    rows = order_rows(shortlist, measured)
    question = f"domain {shortlist.domain or 'any'}, axis {shortlist.axis or 'any'}"
    lines = [
        f"# Scenario: {question}",
        "",
        f"Theory: the screen in `{shortlist.path}`. Measurement: the run {run_label}. Families are shown side by "
        'side and never blended into one number; a model is not "best", it is best at something.',
        "",
        "## Candidates",
        "",
        *_candidates(shortlist, measured),
        "",
        "## Theory order against measured order",
        "",
        *_order(rows, order_family, shortlist.domain),
        "",
        "## Warnings",
        "",
        *_warnings(measured, thresholds),
        "",
        "## Ceiling references",
        "",
        *_ceilings(shortlist, rows, order_family),
        "",
        "## Not compared",
        "",
        *_unmatched(shortlist, measured, in_run),
        "",
        "## Limits",
        "",
        "- The theory is only as good as its evidence (the screen reads what the entries say and checks none of it).",
        "- The measurement is this run's items and judge: a small run gives wide intervals, and the local judge's "
        "verdicts are not clinical judgements.",
        "",
    ]
    return "\n".join(lines)
