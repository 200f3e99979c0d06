"""The end-to-end routing row: the manifest's routing cross-validated with each question's bucket *inferred*.

The manifest's ``validation`` block assumes every held-out item's bucket is known. In service a
request is a question and its bucket is guessed, so this row repeats the same k folds (the same
seeded, bucket-stratified deal as :func:`routing.decide.validation.cross_validate`) and, for fold f:

1. the routing is rebuilt from the other folds (the same ``decide`` the known-bucket row uses);
2. a :class:`~routing.serve.classifier.BucketClassifier` is fitted on the training items' question
   texts, and its three confidence thresholds are chosen on the training items alone (inner
   k-fold out-of-fold guesses, :func:`routing.serve.routes.choose_thresholds` against the rebuilt
   routing and the training scores);
3. each held-out item's question is classified and climbs the fallback chain (bucket → system →
   family → default) as the router would, and is scored with the score of the model it reaches.

Per family, over the held-out items that have a question text and a score from every compared
model: ``end_to_end`` (this routing), ``known_bucket`` (the known-bucket routing of the same folds),
``default`` (the rebuilt manifest's default model), ``best_single`` and ``oracle`` as in the
known-bucket row, ``lift`` = end_to_end − best single (with ``gap_recovered``), and
``lift_vs_known`` = end_to_end − known_bucket — what guessing the bucket costs. Also: how often the
guessed route picked the known route's model (``same_model_as_known``), the classifier's held-out
accuracy per level, and how many items each level served (``route_by``). CIs: percentile bootstrap
over the evaluated items, the same resamples for every column.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from eval.encoders import Encoder
from routing.decide.validation import (
    DEFAULT_K,
    assign_folds,
    best_single,
    family_scores,
    manifest_decider,
    oracle_scores,
    paired_summary,
    routed_model,
)
from routing.load.runs import Loaded
from routing.load.table import ScoreTable
from routing.serve.classifier import (
    DEFAULT_NEIGHBOURS,
    LEVELS,
    BucketClassifier,
    BucketPath,
    accuracy,
    out_of_fold_guesses,
)
from routing.serve.routes import choose_thresholds, resolve, route_table
from routing.serve.texts import TextsError, item_texts
from routing.stats.intervals import LEVEL, json_number, percentile_ci, resampled_ratios

INNER_K = 5  # folds of the threshold choice inside each training part
ROUTE_BY = ("bucket", "system", "family", "default")
METHOD = (
    "the known-bucket row's k folds; per fold a k-NN bucket classifier fitted on the training items' question texts, "
    f"its confidence thresholds chosen by {INNER_K}-fold cross-validation on the training items (maximising the "
    "routed mean score), and each held-out question classified and sent up the fallback chain (bucket -> system -> "
    "family -> default) of the manifest rebuilt on the training folds; scored with that model's score on the item"
)


def item_paths(table: ScoreTable, keep: np.ndarray | None) -> tuple[list[Any], dict[int, BucketPath]]:
    """(family score matrices as :func:`routing.decide.validation.family_scores` gives them,
    item code -> its bucket path)."""
    keep = np.ones(len(table), dtype=bool) if keep is None else keep
    families = family_scores(table, keep)
    systems = table.names("system")
    system_of = dict(zip(table.item.tolist(), table.system.tolist(), strict=True))
    paths: dict[int, BucketPath] = {}
    for fam in families:
        for item, b in zip(fam.items.tolist(), fam.bucket.tolist(), strict=True):
            system = f"specialty/system/{systems[system_of[item]]}" if fam.family == "specialty" else ""
            paths[item] = BucketPath(fam.buckets[b], system, fam.family)
    return families, paths


def _stat(draws: np.ndarray, value: float) -> dict[str, Any]:
    lo, hi = percentile_ci(draws[:, None], LEVEL)[:, 0]
    return {"value": json_number(value), "ci": [json_number(lo), json_number(hi)]}


def end_to_end(
    table: ScoreTable,
    keep: np.ndarray | None,
    parameters: Mapping[str, Any],
    texts: Mapping[str, str],
    *,
    k: int = DEFAULT_K,
    seed: int = 0,
    rounds: int = 1000,
    neighbours: int = DEFAULT_NEIGHBOURS,
    encoder: Encoder | None = None,
) -> dict[str, Any]:
    """The ``validation.end_to_end`` block (module docstring). ``parameters``: the build's (min_n, top_k,
    floor, alpha); ``texts``: item id -> question text (:func:`routing.serve.texts.item_texts`)."""
    keep = np.ones(len(table), dtype=bool) if keep is None else keep
    decide = manifest_decider(table, parameters, rounds, seed, every_decision=True)
    min_n = parameters["min_n"]
    families, paths = item_paths(table, keep)
    strata = np.full(len(table.items), -1, dtype=np.int64)
    offset = 0
    for fam in families:  # the deal of routing.decide.validation.cross_validate, so the folds are the same
        strata[fam.items] = offset + fam.bucket
        offset += len(fam.buckets)
    folds = assign_folds(strata, k, seed)
    models = sorted({m for fam in families for m in fam.models})
    column = {m: j for j, m in enumerate(models)}
    scored_items = np.array(sorted(paths), dtype=np.int64)
    scores = np.full((len(table.items), len(models)), np.nan)
    for fam in families:
        scores[np.ix_(fam.items, [column[m] for m in fam.models])] = fam.scores
    text_of = {code: texts.get(table.items[code]) for code in scored_items.tolist()}
    with_text = np.array([bool(text_of[c]) for c in scored_items.tolist()], dtype=bool)
    chosen = np.full(len(table.items), -1)  # per item code: the column the inferred route reached
    known = np.full(len(table.items), -1)
    default = np.full(len(table.items), -1)
    climbed = np.full(len(table.items), -1)
    guessed: dict[int, tuple[str, ...]] = {}
    thresholds: list[list[float | None]] = []
    for fold in range(k):
        held = folds == fold
        if not held[scored_items].any():
            continue
        manifest = decide(keep & ~held[table.item])
        routes = route_table(manifest)
        train = scored_items[~held[scored_items] & with_text]
        test = scored_items[held[scored_items] & with_text]
        for code in scored_items[held[scored_items]].tolist():
            known[code] = column.get(routed_model(manifest, paths[code].bucket)[0] or "", -1)
            default[code] = column.get(routes.default.model or "", -1)
        if not len(train) or not len(test):
            continue
        train_texts, train_paths = [text_of[c] for c in train.tolist()], [paths[c] for c in train.tolist()]
        inner = assign_folds(
            np.unique([p.bucket for p in train_paths], return_inverse=True)[1], min(INNER_K, len(train)), seed
        )
        labels, confidence = out_of_fold_guesses(
            train_texts, train_paths, inner, neighbours=neighbours, encoder=encoder
        )
        limits, _ = choose_thresholds(labels, confidence, routes, scores[train], models)
        thresholds.append([json_number(t) for t in limits.as_tuple()])
        classifier = BucketClassifier.fit(train_texts, train_paths, neighbours=neighbours, encoder=encoder)
        codes, conf = classifier.guess_many([text_of[c] for c in test.tolist()])
        for row, code in enumerate(test.tolist()):
            guess = tuple(classifier.names[j][codes[row, j]] for j in range(len(LEVELS)))
            target, _, level = resolve(guess, conf[row], limits)
            guessed[code] = guess
            climbed[code] = level
            chosen[code] = column.get(routes.route(target).model or "", -1)
    out_families: dict[str, Any] = {}
    for fam in families:
        items = fam.items[np.isin(fam.items, list(guessed))]
        padded = np.column_stack([scores[items], np.full(len(items), np.nan)])
        rows = np.arange(len(items))
        e2e, via_known, via_default = (padded[rows, c[items]] for c in (chosen, known, default))
        single = np.full(len(items), np.nan)
        for fold in np.unique(folds[items]):
            best = best_single(fam.scores[folds[fam.items] != fold], min_n)
            if best >= 0:
                here = folds[items] == fold
                single[here] = padded[rows[here], column[fam.models[best]]]
        oracle = oracle_scores(fam.scores[np.searchsorted(fam.items, items)])
        both = ~np.isnan(e2e) & ~np.isnan(via_known) & ~np.isnan(via_default) & ~np.isnan(single) & ~np.isnan(oracle)
        summary = paired_summary(e2e[both], single[both], oracle[both], rounds, seed)
        entry: dict[str, Any] = {
            "items": len(fam.items),
            "with_text": int(len(items)),
            "evaluated": summary["evaluated"],
        }
        entry["end_to_end"] = summary["routed"]
        if summary["evaluated"]:
            draws = resampled_ratios(
                np.stack([via_known[both], via_default[both], e2e[both] - via_known[both]], axis=1),
                np.ones((int(both.sum()), 3)),
                int(both.sum()),
                rounds,
                seed,
            )
            means = [
                float(via_known[both].mean()),
                float(via_default[both].mean()),
                float((e2e - via_known)[both].mean()),
            ]
            entry["known_bucket"], entry["default"], lift_vs_known = (_stat(draws[:, j], means[j]) for j in range(3))
        else:
            nothing = {"value": None, "ci": [None, None]}
            entry["known_bucket"], entry["default"], lift_vs_known = nothing, nothing, nothing
        entry.update(
            best_single=summary["best_single"],
            oracle=summary["oracle"],
            lift=summary["lift"],
            lift_vs_known=lift_vs_known,
            gap_recovered=summary["gap_recovered"],
        )
        same = (chosen[items] == known[items])[both]
        entry["same_model_as_known"] = json_number(same.mean()) if len(same) else None
        held_paths = [paths[c] for c in items.tolist()]
        entry["classifier_accuracy"] = {
            level: json_number(v) if v is not None else None
            for level, v in accuracy([guessed[c] for c in items.tolist()], held_paths).items()
        }
        levels = climbed[items]
        entry["route_by"] = {name: int((levels == i).sum()) for i, name in enumerate(ROUTE_BY) if (levels == i).any()}
        entry["missing"] = {"no_text": int(len(fam.items) - len(items)), "unscored": int(len(items) - both.sum())}
        out_families[fam.family] = entry
    return {
        "method": METHOD,
        "k": k,
        "seed": seed,
        "bootstrap": rounds,
        "ci_level": LEVEL,
        "classifier": {
            "kind": "k-nearest neighbours, similarity-weighted votes",
            "neighbours": neighbours,
            "encoder": "tfidf-char-1-2 (fitted on the training items)" if encoder is None else "given encoder",
        },
        "thresholds": thresholds,
        "families": out_families,
    }


def end_to_end_row(
    loaded: Loaded,
    keep: np.ndarray | None,
    parameters: Mapping[str, Any],
    *,
    k: int = DEFAULT_K,
    seed: int = 0,
    rounds: int = 1000,
) -> dict[str, Any]:
    """:func:`end_to_end` on loaded runs, their question texts read from each run's store; without any
    text (runs written by something other than pool.run) the row says so instead of guessing."""
    texts: dict[str, str] = {}
    problems: list[str] = []
    for run in loaded.runs:
        try:
            texts.update(item_texts(run.dir))
        except TextsError as exc:
            problems.append(str(exc))
    if not texts:
        return {
            "method": METHOD,
            "skipped": "no question texts to classify: " + ("; ".join(problems) or "no answered item"),
        }
    return end_to_end(loaded.table, keep, parameters, texts, k=k, seed=seed, rounds=rounds)
