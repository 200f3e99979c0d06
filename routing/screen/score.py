"""The screen itself: evidence rows scored as champions, each local candidate scored against its family's
champions, tiers, and the ceiling references (strong champions that cannot be run locally).

Pure: entries and candidates in (:mod:`routing.screen.evidence`, :mod:`routing.screen.models`), a
:class:`Screen` out; the arithmetic is :mod:`routing.screen.formula`. Matching the asked ``domain`` and
``axis``: a row's axis equals the asked axis (case-insensitive); its entry's domains hold the asked domain,
or its system (``cardiology`` for ``cardiology:hypertension``), or a topic of it. Nothing asked matches
everything: without ``--domain`` every row is on the domain, without ``--axis`` on the axis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from routing.screen.evidence import EvidenceEntry, RankedRow
from routing.screen.formula import (
    Weights,
    authority_term,
    candidate_score,
    champion_score,
    contam_term,
    proximity,
    rank_term,
    relevance,
    tier_of,
    verdict_term,
)
from routing.screen.models import Candidate, family_of, size_of


@dataclass(frozen=True)
class Champion:
    """One evidence row, scored: the terms of its score and how relevant it is to the question asked."""

    entry: EvidenceEntry
    row: RankedRow
    family: str | None
    size_b: float | None
    rank: float
    authority: float
    verdict: float
    contam: float
    score: float
    domain_match: bool
    axis_match: bool
    relevance: float

    def formula(self, w: Weights) -> str:
        """``clip01(0.4·1.000 + 0.3·0.680 + 0.3·1.000 − 0.2·0) = 0.904``: the score with its terms."""
        return (
            f"clip01({w.w_rank:g}·{self.rank:.3f} + {w.w_authority:g}·{self.authority:.3f} + "
            f"{w.w_verdict:g}·{self.verdict:.3f} − {w.w_contam:g}·{self.contam:g}) = {self.score:.3f}"
        )


@dataclass(frozen=True)
class Match:
    """A candidate's best champion: the champion, the size proximity and the candidate score it gives."""

    champion: Champion
    proximity: float
    value: float


@dataclass(frozen=True)
class Screened:
    """One local candidate's result."""

    name: str
    family: str | None
    size_b: float | None
    score: float
    tier: str
    best: Match | None  # None: the neutral prior
    why: tuple[str, ...]


@dataclass(frozen=True)
class Screen:
    """What the screen found; :mod:`routing.screen.shortlist` and :mod:`routing.screen.page` write it."""

    domain: str | None
    axis: str | None
    weights: Weights
    toward_prior: bool
    families: tuple[str, ...]
    entries: tuple[EvidenceEntry, ...]
    champions: tuple[Champion, ...]
    candidates: tuple[Screened, ...]  # best score first
    ceilings: tuple[Champion, ...]  # strongest first


def domain_matches(domains: Sequence[str], wanted: str | None) -> bool:
    """Whether an entry's domains cover the asked one (module docstring)."""
    if wanted is None:
        return True
    wanted = wanted.strip().lower()
    for domain in (d.strip().lower() for d in domains):
        if domain == wanted or domain == wanted.split(":", 1)[0] or wanted == domain.split(":", 1)[0]:
            return True
    return False


def axis_matches(axis: str | None, wanted: str | None) -> bool:
    return wanted is None or (axis is not None and axis.strip().lower() == wanted.strip().lower())


def score_champions(
    entries: Sequence[EvidenceEntry], domain: str | None, axis: str | None, w: Weights, families: Sequence[str]
) -> list[Champion]:
    """Every ranked row of every entry, scored, in file and row order."""
    out = []
    for entry in entries:
        authority = authority_term(entry.institutions, entry.citations, entry.maintainers, entry.cadence, w)
        verdict = verdict_term(entry.confidence, w)
        contam = contam_term(entry.genre, entry.contamination_controls)
        on_domain = domain_matches(entry.domains, domain)
        for row in entry.rows:
            rank = rank_term(row.rank, w)
            on_axis = axis_matches(row.axis, axis)
            out.append(
                Champion(
                    entry=entry,
                    row=row,
                    family=family_of(row.model, families),
                    size_b=size_of(row.model),
                    rank=rank,
                    authority=authority,
                    verdict=verdict,
                    contam=contam,
                    score=champion_score(rank, authority, verdict, contam, w),
                    domain_match=on_domain,
                    axis_match=on_axis,
                    relevance=relevance(on_domain, on_axis, w),
                )
            )
    return out


def _size(size: float | None) -> str:
    return "unknown size" if size is None else f"{size:g}b"


def _relevance_words(c: Champion) -> str:
    if c.domain_match and c.axis_match:
        return "domain and axis"
    return "axis only" if c.axis_match else ("domain only" if c.domain_match else "neither domain nor axis")


def screen_candidate(
    candidate: Candidate, champions: Sequence[Champion], w: Weights, families: Sequence[str], toward_prior: bool
) -> Screened:
    """A candidate's score: the best over its family's champions, else the neutral prior, with why-lines."""
    family, size = candidate.family(families), candidate.size_b()
    same = [c for c in champions if family is not None and c.family == family]
    why = [f"family {family or 'unknown'}, {_size(size)}"]
    if not same:
        reason = (
            f"no evidence ranks a {family} model"
            if family
            else f"its name names none of the families ({', '.join(families)}; add one with --family)"
        )
        why.append(
            f"{reason}: neutral prior {w.prior:g} — nothing is known either way, so the screen neither "
            "promotes nor drops it; measure it to learn more"
        )
        return Screened(candidate.name, family, size, w.prior, tier_of(w.prior, w), None, tuple(why))
    matches = []
    for c in same:
        prox = proximity(size, c.size_b, w)
        matches.append(Match(c, prox, candidate_score(c.relevance, prox, c.score, w, toward_prior)))
    best = max(matches, key=lambda m: (m.value, m.champion.score))
    c = best.champion
    rank = f"rank {c.row.rank}" if c.row.rank is not None else "unranked"
    why.append(
        f"best evidence: {c.row.model} ({rank}, axis {c.row.axis or '-'}) in {c.entry.title} "
        f"({c.entry.path.name}): champion {c.formula(w)}"
    )
    size_words = (
        f"{_size(size)} vs {_size(c.size_b)}" if size is not None and c.size_b is not None else "a size unknown"
    )
    why.append(f"relevance {c.relevance:g} ({_relevance_words(c)}); proximity {best.proximity:.3f} ({size_words})")
    if toward_prior:
        why.append(
            f"score {best.value:.3f} = {w.prior:g} + {c.relevance:g} × {best.proximity:.3f} × "
            f"({c.score:.3f} − {w.prior:g})  (--toward-prior)"
        )
    else:
        why.append(f"score {best.value:.3f} = {c.relevance:g} × {best.proximity:.3f} × {c.score:.3f}")
        if best.value < w.prior:
            why.append(
                f"below the neutral prior {w.prior:g} a model without evidence gets: the default formula's "
                "weak spot (docs/screen.md); --toward-prior shrinks toward the prior instead"
            )
    if len(same) > 1:
        why.append(f"{len(same)} {family} rows read; the best counts")
    return Screened(candidate.name, family, size, best.value, tier_of(best.value, w), best, tuple(why))


def ceilings(champions: Sequence[Champion], local: Sequence[str], top: int) -> list[Champion]:
    """The ``top`` strongest champions not in the pool (by relevance × score; each model once, its best row)."""
    names = {name.lower() for name in local}
    best: dict[str, Champion] = {}
    for c in champions:
        key = c.row.model.lower()
        if key in names:
            continue
        if key not in best or c.relevance * c.score > best[key].relevance * best[key].score:
            best[key] = c
    ranked = sorted(best.values(), key=lambda c: (-c.relevance * c.score, c.row.model.lower()))
    return ranked[:top]


def run_screen(
    entries: Sequence[EvidenceEntry],
    candidates: Sequence[Candidate],
    *,
    domain: str | None = None,
    axis: str | None = None,
    weights: Weights | None = None,
    families: Sequence[str],
    toward_prior: bool = False,
    top: int = 5,
) -> Screen:
    """The whole screen (module docstring)."""
    w = weights or Weights()
    champions = score_champions(entries, domain, axis, w, families)
    screened = [screen_candidate(c, champions, w, families, toward_prior) for c in candidates]
    screened.sort(key=lambda s: (-s.score, s.name))
    return Screen(
        domain=domain,
        axis=axis,
        weights=w,
        toward_prior=toward_prior,
        families=tuple(families),
        entries=tuple(entries),
        champions=tuple(champions),
        candidates=tuple(screened),
        ceilings=tuple(ceilings(champions, [c.name for c in candidates], top)),
    )
