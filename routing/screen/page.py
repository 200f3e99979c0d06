"""``screen.md``: the screen for a person — the tiers, why each candidate got its score, the ceiling
references, every evidence row with the terms of its score, the weights, and the screen's limits."""

from __future__ import annotations

from routing.screen.formula import TIERS, Weights
from routing.screen.score import Champion, Screen


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _size(size: float | None) -> str:
    return "-" if size is None else f"{size:g}b"


def _question(screen: Screen) -> str:
    return f"domain **{screen.domain or 'any'}**, axis **{screen.axis or 'any'}**"


def _candidates(screen: Screen) -> list[str]:
    lines = [
        "| candidate | family | size | score | tier | best evidence |",
        "|---|---|---|---|---|---|",
    ]
    for s in screen.candidates:
        best = (
            f"{_cell(s.best.champion.row.model)} in {_cell(s.best.champion.entry.title)}"
            if s.best
            else f"none: neutral prior {screen.weights.prior:g}"
        )
        lines.append(f"| {_cell(s.name)} | {s.family or '-'} | {_size(s.size_b)} | {s.score:.3f} | {s.tier} | {best} |")
    lines += ["", "Why:", ""]
    for s in screen.candidates:
        lines.append(f"- **{_cell(s.name)}** ({s.tier}, {s.score:.3f})")
        lines += [f"  - {line}" for line in s.why]
    return lines


def _ceilings(screen: Screen) -> list[str]:
    if not screen.ceilings:
        return ["No ranked model outside the pool: nothing to measure the candidates against."]
    lines = [
        "Strong champions the pool cannot run (`testable: false`): what the best local candidate is measured "
        "against in the scenario report, when the source publishes a score.",
        "",
        "| model | family | rank | axis | license | champion score | relevance | published score | source |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in screen.ceilings:
        published = "-" if c.row.published is None else f"{c.row.published:g}"
        lines.append(
            f"| {_cell(c.row.model)} | {c.family or '-'} | {c.row.rank or '-'} | {_cell(c.row.axis or '-')} | "
            f"{_cell(c.row.license or '-')} | {c.score:.3f} | {c.relevance:g} | {published} | "
            f"{_cell(c.entry.title)} |"
        )
    return lines


def _evidence(champions: tuple[Champion, ...], w: Weights) -> list[str]:
    lines = [
        "| source | model | family | rank term | authority | verdict | contam | champion score | relevance |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for c in champions:
        lines.append(
            f"| {_cell(c.entry.title)} ({_cell(c.entry.path.name)}:{c.row.line}) | {_cell(c.row.model)} | "
            f"{c.family or '-'} | {c.rank:.2f} | {c.authority:.3f} | {c.verdict:g} | {c.contam:g} | "
            f"{c.score:.3f} | {c.relevance:g} |"
        )
    entry = champions[0].entry if champions else None
    if entry is not None:
        lines += [
            "",
            f"champion = clip01({w.w_rank:g}·rank + {w.w_authority:g}·authority + {w.w_verdict:g}·verdict − "
            f"{w.w_contam:g}·contam); authority = {w.w_institutions:g}·min(1, institutions/{w.institutions_full:g}) + "
            f"{w.w_citations:g}·min(1, citations/{w.citations_full:g}) + "
            f"{w.w_maintainers:g}·min(1, maintainers/{w.maintainers_full:g}) + {w.w_cadence:g}·cadence.",
        ]
    return lines


def render_screen(screen: Screen, generated_at: str) -> str:
    """The page (module docstring)."""
    w = screen.weights
    entries = "entry" if len(screen.entries) == 1 else "entries"
    counts = {tier: sum(s.tier == tier for s in screen.candidates) for tier in TIERS}
    changed = w.changed()
    formula = (
        f"prior + relevance × proximity × (champion − prior) (`--toward-prior`, prior {w.prior:g})"
        if screen.toward_prior
        else "relevance × proximity × champion (the default)"
    )
    lines = [
        f"# Theory screen: {_question(screen)}",
        "",
        f"Generated {generated_at} from {len(screen.entries)} evidence {entries} "
        f"({len(screen.champions)} ranked rows), no model called. {counts['must-test']} must-test "
        f"(score ≥ {w.must_test:g}), {counts['optional']} optional (≥ {w.optional:g}), {counts['skip']} skip.",
        "",
        f"Candidate score: the best over its family's champions of {formula}; no champion of its family: "
        f"the neutral prior {w.prior:g}.",
        "",
        "## Candidates",
        "",
        *_candidates(screen),
        "",
        "## Ceiling references",
        "",
        *_ceilings(screen),
        "",
        "## Evidence rows",
        "",
        *_evidence(screen.champions, w),
        "",
        "## Weights",
        "",
        ("Changed from the defaults: " + ", ".join(f"{k} {v:g}" for k, v in changed.items()) + ".")
        if changed
        else "The defaults (`python -m routing.screen --help` lists every weight as a flag).",
        f"Families, in the order they are looked for: {', '.join(screen.families)}.",
        "",
        "## Limits",
        "",
        "- The screen is only as good as its evidence: it reads what the entries say, checks none of it, and "
        "calls no model. Its tiers say what is worth measuring, not which model is better.",
        "- A family name and a size are read from model names; a fine-tune named after its base inherits the "
        "base's evidence.",
        "- Sources score on their own scales; published scores and medpool's measured scores are comparable "
        "only roughly (the scenario report says so where it compares them).",
        "",
    ]
    return "\n".join(lines)
