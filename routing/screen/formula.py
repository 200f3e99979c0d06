"""The theory screen's arithmetic: every weight declared once in :class:`Weights`, every term a pure function.

The formula is the model-selection screen of the med-agent-verifier README's design, with its numbers
as the defaults. An *evidence row* is one model one source ranks (a champion); its score is

    champion = clip01(w_rank·rank + w_authority·authority + w_verdict·verdict − w_contam·contam)

- rank = max(0, 1 − rank_step·(rank − 1)); rank_missing when the source gives no rank;
- authority = w_institutions·min(1, institutions/institutions_full) + w_citations·min(1, citations/citations_full)
  + w_maintainers·min(1, maintainers/maintainers_full) + w_cadence·cadence, where cadence is live 1.0,
  monthly 0.8, quarterly 0.6, yearly or irregular 0.4, frozen 0.2, anything else 0.3;
- verdict = the expert verdict's confidence: high 1, medium 0.6, low or missing 0.3;
- contam = 1 for an online leaderboard without contamination controls, else 0.

A local candidate's score is the best, over the champions of its family, of

    relevance × proximity × champion                                  (the default)
    prior + relevance × proximity × (champion − prior)                (``toward_prior``)

with relevance rel_both / rel_axis / rel_domain / rel_neither (the row matches the asked domain and axis /
the axis / the domain / neither) and proximity = proximity_base + (1 − proximity_base)·min/max of the
two sizes, proximity_unknown when either size is unknown. A candidate without a champion of its family
gets the neutral ``prior``. Tiers: must-test at ``must_test`` or more, optional at ``optional`` or
more, else skip.

Why ``toward_prior`` exists: under the default product a family's evidence can only pull a candidate
*below* a candidate of which nothing is known as soon as relevance × proximity is small (a 0.5b model
next to a 72b champion of score 1.0 gets 0.7 × 0.404 = 0.28 < 0.4). Shrinking toward the prior
instead lets weak or distant evidence say little, and strong near evidence say much, in either
direction (docs/screen.md, "Where the default formula is weak").
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

_HELP = "medpool.help"


def _weight(default: float, help_text: str) -> Any:
    return field(default=default, metadata={_HELP: help_text})


@dataclass(frozen=True)
class Weights:
    """Every number of the screen, each a ``python -m routing.screen`` flag (``w_rank`` is ``--w-rank``)."""

    w_rank: float = _weight(0.4, "weight of the rank term in a champion's score")
    w_authority: float = _weight(0.3, "weight of the source's authority in a champion's score")
    w_verdict: float = _weight(0.3, "weight of the expert verdict's confidence in a champion's score")
    w_contam: float = _weight(0.2, "penalty for an online leaderboard without contamination controls")
    w_institutions: float = _weight(0.4, "authority: weight of the institution count")
    w_citations: float = _weight(0.2, "authority: weight of the citation count")
    w_maintainers: float = _weight(0.2, "authority: weight of the number of maintainers")
    w_cadence: float = _weight(0.2, "authority: weight of the update cadence")
    institutions_full: float = _weight(500, "institutions that count as full authority")
    citations_full: float = _weight(1000, "citations that count as full authority")
    maintainers_full: float = _weight(3, "maintainers that count as full authority")
    cadence_live: float = _weight(1.0, "cadence term of a live source")
    cadence_monthly: float = _weight(0.8, "cadence term of a monthly source")
    cadence_quarterly: float = _weight(0.6, "cadence term of a quarterly source")
    cadence_yearly: float = _weight(0.4, "cadence term of a yearly source")
    cadence_irregular: float = _weight(0.4, "cadence term of an irregular source")
    cadence_frozen: float = _weight(0.2, "cadence term of a frozen source")
    cadence_other: float = _weight(0.3, "cadence term of any other or missing cadence")
    rank_step: float = _weight(0.2, "rank term: 1 − rank_step·(rank − 1), floored at 0")
    rank_missing: float = _weight(0.5, "rank term of a row without a rank")
    verdict_high: float = _weight(1.0, "verdict term of confidence high")
    verdict_medium: float = _weight(0.6, "verdict term of confidence medium")
    verdict_low: float = _weight(0.3, "verdict term of confidence low or missing")
    rel_both: float = _weight(1.0, "relevance of a row matching the asked domain and axis")
    rel_axis: float = _weight(0.7, "relevance of a row matching the asked axis only")
    rel_domain: float = _weight(0.5, "relevance of a row matching the asked domain only")
    rel_neither: float = _weight(0.3, "relevance of a row matching neither")
    proximity_base: float = _weight(0.4, "size proximity: base + (1 − base)·min/max of the sizes")
    proximity_unknown: float = _weight(0.7, "size proximity when either size is unknown")
    prior: float = _weight(0.4, "neutral prior of a candidate without evidence on its family")
    must_test: float = _weight(0.55, "lowest score of the must-test tier")
    optional: float = _weight(0.30, "lowest score of the optional tier")

    def cadences(self) -> dict[str, float]:
        """The known cadence words and their terms (any other word is ``cadence_other``)."""
        return {
            "live": self.cadence_live,
            "monthly": self.cadence_monthly,
            "quarterly": self.cadence_quarterly,
            "yearly": self.cadence_yearly,
            "irregular": self.cadence_irregular,
            "frozen": self.cadence_frozen,
        }

    def changed(self) -> dict[str, float]:
        """The weights that differ from the defaults (what ``screen.md`` names)."""
        default = Weights()
        return {
            f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) != getattr(default, f.name)
        }

    def as_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def weight_help() -> dict[str, str]:
    """Field name → help text, for the CLI's flags."""
    return {f.name: f.metadata[_HELP] for f in fields(Weights)}


MUST_TEST, OPTIONAL, SKIP = "must-test", "optional", "skip"
TIERS = (MUST_TEST, OPTIONAL, SKIP)
CONFIDENCES = ("high", "medium", "low")
ONLINE_LEADERBOARD = "online_leaderboard"
EPSILON = 1e-9  # 0.4·0.75 + … lands a hair below a threshold it equals


def clip01(x: float) -> float:
    return min(1.0, max(0.0, x))


def rank_term(rank: int | None, w: Weights) -> float:
    """1 − rank_step·(rank − 1), floored at 0; ``rank_missing`` without a rank."""
    return w.rank_missing if rank is None else max(0.0, 1.0 - w.rank_step * (rank - 1))


def cadence_term(cadence: str | None, w: Weights) -> float:
    return w.cadences().get((cadence or "").strip().lower(), w.cadence_other)


def authority_term(institutions: float, citations: float, maintainers: int, cadence: str | None, w: Weights) -> float:
    """w_institutions·min(1, i/full) + w_citations·min(1, c/full) + w_maintainers·min(1, m/full) + w_cadence·cadence."""
    return (
        w.w_institutions * min(1.0, institutions / w.institutions_full)
        + w.w_citations * min(1.0, citations / w.citations_full)
        + w.w_maintainers * min(1.0, maintainers / w.maintainers_full)
        + w.w_cadence * cadence_term(cadence, w)
    )


def verdict_term(confidence: str | None, w: Weights) -> float:
    """high / medium / low or missing."""
    return {"high": w.verdict_high, "medium": w.verdict_medium}.get((confidence or "").strip().lower(), w.verdict_low)


def normal_genre(genre: str | None) -> str:
    """``Online leaderboard`` / ``online-leaderboard`` → ``online_leaderboard``."""
    return "_".join((genre or "").strip().lower().replace("-", " ").replace("_", " ").split())


def contam_term(genre: str | None, has_controls: bool) -> float:
    """1 for an online leaderboard that declares no contamination controls, else 0."""
    return 1.0 if normal_genre(genre) == ONLINE_LEADERBOARD and not has_controls else 0.0


def champion_score(rank: float, authority: float, verdict: float, contam: float, w: Weights) -> float:
    """clip01(w_rank·rank + w_authority·authority + w_verdict·verdict − w_contam·contam), from the terms."""
    return clip01(w.w_rank * rank + w.w_authority * authority + w.w_verdict * verdict - w.w_contam * contam)


def relevance(domain_matches: bool, axis_matches: bool, w: Weights) -> float:
    if domain_matches and axis_matches:
        return w.rel_both
    if axis_matches:
        return w.rel_axis
    return w.rel_domain if domain_matches else w.rel_neither


def proximity(size_a: float | None, size_b: float | None, w: Weights) -> float:
    """base + (1 − base)·min/max of the two sizes; ``proximity_unknown`` when either is unknown (or 0)."""
    if not size_a or not size_b:
        return w.proximity_unknown
    return w.proximity_base + (1.0 - w.proximity_base) * min(size_a, size_b) / max(size_a, size_b)


def candidate_score(rel: float, prox: float, champion: float, w: Weights, toward_prior: bool) -> float:
    """One champion's say on a candidate: the product (default) or the shrinkage toward the prior."""
    if toward_prior:
        return clip01(w.prior + rel * prox * (champion - w.prior))
    return rel * prox * champion


def tier_of(score: float, w: Weights) -> str:
    """must-test / optional / skip; a score equal to a threshold (up to float rounding) reaches it."""
    if score + EPSILON >= w.must_test:
        return MUST_TEST
    return OPTIONAL if score + EPSILON >= w.optional else SKIP
