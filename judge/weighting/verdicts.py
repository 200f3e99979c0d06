"""A verdict's weighted values, contract by contract, from its reply text and token logprobs.

- rubric (``reference``, ``criteria``): ``{dimension: E[score]}`` for each of the four dimensions
  found, and ``total`` (their sum) only when all four are;
- ``criteria_items``: ``{criterion id: P(met)}``;
- ``probe``: P(``success``);
- ``hallu``: P(``supported``) per claim, in the claims' order (None where a label's position is unknown).

Every function returns None (or leaves a key out) where the weighted value is absent (package doc).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from judge.rubric import DIMENSIONS
from judge.verdicts import CLAIM_LABELS
from judge.weighting.distributions import expected_score, label_probabilities, p_yes
from judge.weighting.positions import Path, TokenView, value_spans

RUBRIC_CONTRACTS = ("reference", "criteria")
WEIGHTED_CONTRACTS = (*RUBRIC_CONTRACTS, "criteria_items", "probe", "hallu")
PROBE_LABELS = ("success", "failure")


def _read(reply: str, logprobs: Iterable[Any] | None) -> tuple[TokenView, dict[Path, tuple[int, Any]]] | None:
    view = TokenView.of(reply, logprobs)
    spans = value_spans(view.text) if view is not None else None
    return None if view is None or spans is None else (view, spans)


def weigh_rubric(reply: str, logprobs: Iterable[Any] | None) -> dict[str, float] | None:
    """The four dimensions' expected scores and their total (module doc); None when none is found."""
    read = _read(reply, logprobs)
    if read is None:
        return None
    view, spans = read
    out: dict[str, float] = {}
    for name in DIMENSIONS:
        span = spans.get((name,))
        if span is None or isinstance(span[1], bool) or not isinstance(span[1], int):
            continue
        value = expected_score(view, span[0])
        if value is not None:
            out[name] = round(value, 4)
    if not out:
        return None
    if len(out) == len(DIMENSIONS):
        out["total"] = round(sum(out[name] for name in DIMENSIONS), 4)
    return out


def weigh_criteria_items(reply: str, logprobs: Iterable[Any] | None) -> dict[str, float]:
    """``{criterion id: P(met)}`` for every ``items[i]`` whose ``met`` position is found."""
    read = _read(reply, logprobs)
    if read is None:
        return {}
    view, spans = read
    out: dict[str, float] = {}
    i = 0
    while ("items", i, "id") in spans or ("items", i, "met") in spans:
        ident, met = spans.get(("items", i, "id")), spans.get(("items", i, "met"))
        if ident is not None and met is not None and isinstance(met[1], bool) and isinstance(ident[1], str):
            p = p_yes(view, met[0])
            if p is not None:
                out[ident[1]] = round(p, 4)
        i += 1
    return out


def weigh_probe(reply: str, logprobs: Iterable[Any] | None) -> float | None:
    """P(``success``) at the probe verdict's ``verdict`` value."""
    read = _read(reply, logprobs)
    span = None if read is None else read[1].get(("verdict",))
    if read is None or span is None or not isinstance(span[1], str):
        return None
    probs = label_probabilities(read[0], span[0], PROBE_LABELS)
    return None if probs is None else round(probs["success"], 4)


def weigh_claims(reply: str, logprobs: Iterable[Any] | None) -> list[float | None]:
    """P(``supported``) of every claim's label, in order (None where its position is not found)."""
    read = _read(reply, logprobs)
    if read is None:
        return []
    view, spans = read
    out: list[float | None] = []
    i = 0
    while ("claims", i, "label") in spans or ("claims", i, "claim") in spans:
        span = spans.get(("claims", i, "label"))
        probs = label_probabilities(view, span[0], CLAIM_LABELS) if span and isinstance(span[1], str) else None
        out.append(None if probs is None else round(probs["supported"], 4))
        i += 1
    return out


def weigh_verdict(contract: str, reply: str, logprobs: Iterable[Any] | None) -> Any:
    """The weighted values of a ``contract`` verdict (module doc); None for a contract not weighed."""
    if contract in RUBRIC_CONTRACTS:
        return weigh_rubric(reply, logprobs)
    if contract == "criteria_items":
        return weigh_criteria_items(reply, logprobs) or None
    if contract == "probe":
        return weigh_probe(reply, logprobs)
    if contract == "hallu":
        return weigh_claims(reply, logprobs) or None
    return None
