"""From a routing manifest and a bucket guess to the model a question goes to, and the chain behind it.

A *target* is what a question is routed by: a bucket id (``family/kind/name``), a family name, or
``default``. :func:`route_table` reads, per target, the manifest's pick (``model``; for a bucket
that is not routable, the pick of its ``served_by``), whether it is ``decisive``, and the *chain*
tried when an upstream is dead: the pick, the other models tied with it (``tied_top`` of the
decision that made the pick), then the default model. A family with no decision, and a target the
manifest does not know, are served by ``default``.

A guess climbs the fallback chain (:func:`resolve`): its finest bucket when the classifier's
confidence there reaches the bucket threshold (``by=classifier``), else its specialty system bucket,
else its family, else ``default`` (each ``by=fallback``). :func:`choose_thresholds` picks the three
thresholds that maximise the mean score of the routed models on out-of-fold guesses.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import numpy as np

from routing.serve.classifier import LEVELS, Guess

NEVER = 1.01  # a threshold no confidence reaches: that level is always climbed past
GRID_QUANTILES = np.linspace(
    0.0, 0.9, 10
)  # candidate thresholds: these quantiles of the out-of-fold confidences, 0, NEVER


@dataclass(frozen=True)
class Route:
    target: str  # bucket id, family name or "default": what served the question
    model: str | None
    decisive: bool
    chain: tuple[str, ...]  # model, the models tied with it, then the default model (distinct, in order)


@dataclass(frozen=True)
class Thresholds:
    bucket: float = 0.0
    system: float = 0.0
    family: float = 0.0

    def as_tuple(self) -> tuple[float, float, float]:
        return (self.bucket, self.system, self.family)


def _decision_route(target: str, decision: Mapping[str, Any] | None, default_model: str | None) -> Route | None:
    if not decision or decision.get("model") is None:
        return None
    model = str(decision["model"])
    tied = [str(m) for m in decision.get("tied_top") or [] if m is not None]
    chain = tuple(dict.fromkeys([model, *tied, *([default_model] if default_model else [])]))
    return Route(target, model, bool(decision.get("decisive")), chain)


@dataclass(frozen=True)
class RouteTable:
    routes: Mapping[str, Route]  # every bucket id and family with a model
    default: Route

    def route(self, target: str) -> Route:
        return self.routes.get(target) or self.default

    def knows(self, target: str) -> bool:
        return target == "default" or target in self.routes

    def models(self) -> set[str]:
        return {m for r in (*self.routes.values(), self.default) for m in r.chain}


def route_table(manifest: Mapping[str, Any]) -> RouteTable:
    """Every target's route (see the module docstring). A manifest with no default model routes to nothing."""
    default_decision = manifest.get("default") or {}
    default_model = default_decision.get("model")
    default = _decision_route("default", default_decision, None) or Route("default", None, False, ())
    families = manifest.get("families") or {}
    routes: dict[str, Route] = {}
    for family, decision in families.items():
        route = _decision_route(str(family), decision, default_model)
        if route is not None:
            routes[str(family)] = route
    buckets = manifest.get("buckets") or {}
    for bucket_id, entry in buckets.items():
        if not isinstance(entry, Mapping) or entry.get("model") is None:
            continue
        served_by = entry.get("served_by") or bucket_id
        if served_by == bucket_id:
            route = _decision_route(str(bucket_id), entry, default_model)
        elif served_by == "default":
            route = default
        else:
            parent = buckets.get(served_by) if "/" in str(served_by) else families.get(served_by)
            route = _decision_route(str(served_by), parent, default_model) or Route(
                str(served_by),
                str(entry["model"]),
                False,
                tuple(dict.fromkeys([str(entry["model"]), *([default_model] if default_model else [])])),
            )
        if route is not None:
            routes[str(bucket_id)] = route
    return RouteTable(routes, default)


def resolve(labels: Sequence[str], confidences: Sequence[float], thresholds: Thresholds) -> tuple[str, str, int]:
    """(target, by, level climbed to: 0 bucket, 1 system, 2 family, 3 default) for one guess."""
    limits = thresholds.as_tuple()
    for level in range(len(LEVELS)):
        if labels[level] and confidences[level] >= limits[level]:
            return labels[level], "classifier" if level == 0 else "fallback", level
    return "default", "fallback", len(LEVELS)


def resolve_guess(guess: Guess, thresholds: Thresholds) -> tuple[str, str]:
    target, by, _ = resolve(guess.labels, guess.confidences, thresholds)
    return target, by


def choose_thresholds(
    labels: Sequence[Sequence[str]],
    confidences: np.ndarray,
    table: RouteTable,
    scores: np.ndarray,
    models: Sequence[str],
) -> tuple[Thresholds, float | None]:
    """The thresholds maximising the mean routed score over items, and that mean (None: no item scored).

    ``labels``/``confidences``: out-of-fold guesses per item (items × levels); ``scores``: items ×
    ``models``, NaN where a model has no score on the item (left out of that combination's mean). The
    grid per level is 0, the out-of-fold confidences' deciles up to the 90th percentile (a trusted level
    admits at least a tenth of the items: a threshold fitted to a few lucky items does not generalise)
    and NEVER; among equal means the lowest thresholds win (bucket first), so a classifier as good as
    its fallback is trusted.
    """
    n = len(labels)
    column = {m: j for j, m in enumerate(models)}
    padded = np.column_stack([scores, np.full(n, np.nan)]) if n else np.zeros((0, len(models) + 1))

    def value(targets: Sequence[str]) -> np.ndarray:
        cols = [column.get(table.route(t).model or "", len(models)) for t in targets]
        return padded[np.arange(n), cols]

    values = [value([row[j] if row[j] else "default" for row in labels]) for j in range(len(LEVELS))] + [
        value(["default"] * n)
    ]
    usable = np.array([[bool(row[j]) for j in range(len(LEVELS))] for row in labels]).reshape(n, len(LEVELS))
    conf = np.where(usable, confidences, -1.0)
    grids = [
        np.unique(np.concatenate([[0.0, NEVER], np.quantile(conf[:, j], GRID_QUANTILES)]))
        if n
        else np.array([0.0, NEVER])
        for j in range(len(LEVELS))
    ]
    grids = [g[g >= 0] for g in grids]
    best: tuple[float, tuple[float, ...]] | None = None
    for combo in itertools.product(*grids):
        taken = np.full(n, False)
        chosen = np.full(n, np.nan)
        for j, limit in enumerate(combo):
            use = ~taken & (conf[:, j] >= limit)
            chosen[use] = values[j][use]
            taken |= use
        chosen[~taken] = values[-1][~taken]
        scored = ~np.isnan(chosen)
        if not scored.any():
            continue
        mean = float(chosen[scored].mean())
        if best is None or mean > best[0] + 1e-12:
            best = (mean, combo)
    if best is None:
        return Thresholds(), None
    return Thresholds(*(float(t) for t in best[1])), best[0]


def route_header(route: Route, model: str, by: str, manifest_sha: str) -> str:
    """The ``x-medpool-route`` value: ``bucket=…; model=…; by=…; decisive=…; manifest=…``, ASCII-safe
    (names outside printable ASCII, and ``;``/``=``, are percent-encoded)."""
    return (
        f"bucket={_header_safe(route.target)}; model={_header_safe(model)}; by={by}; "
        f"decisive={'true' if route.decisive else 'false'}; manifest={manifest_sha}"
    )


def _header_safe(text: str) -> str:
    return quote(text, safe="/:._-+@[]()")
