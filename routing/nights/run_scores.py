"""One run's score per model and family: the numbers the run index keeps for trends.

Per model (its label in the run, see :mod:`routing.load.table`) and family, the score is the mean
``value`` over the family's scored items — every item counted once, since each row belongs to
exactly one leaf bucket (task, domain or skill) of its family. Classification items count with
their per-item accuracy (macro-F1 is not an item mean and would not line up across nights). The
interval is the leaderboard's (:func:`routing.stats.intervals.ratio_intervals`: Wilson for pass/fail, t for
continuous means, never zero-width). When several judges scored a model in one family, the judge
with the most scored items speaks for it (as the manifest's family decisions do), so a point never
blends two judges.

Pure: a :class:`~routing.load.runs.ScoreDigest` (one streaming pass over ``scores.jsonl``, not the whole
score table: the index is written after every run, and must not cost memory in the run's size) in,
plain JSON values out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from routing.load.runs import ScoreDigest
from routing.stats.intervals import json_number, ratio_intervals


def family_scores(digest: ScoreDigest) -> dict[str, dict[str, dict[str, Any]]]:
    """``{model label: {family: {value, ci, ci_method, n, identity, judge}}}``.

    ``identity`` is the model identity key, ``judge`` the judge key (null for judge-free families);
    a change in either from one night to the next breaks a trend line.
    """
    out: dict[str, dict[str, dict[str, Any]]] = {}
    best: dict[tuple[str, str], tuple[int, str, np.ndarray, int]] = {}
    for (entrant, family), values in digest.values.items():
        if not len(values):
            continue
        who = digest.entrants[entrant]
        key = (who.model_label, family)
        judge = who.judge_key or ""
        if key not in best or (len(values), judge) > (best[key][0], best[key][1]):
            best[key] = (len(values), judge, values, entrant)
    for (label, family), (n, _, values, entrant) in sorted(best.items()):
        lo, hi, methods = ratio_intervals(values[:, None], np.ones((n, 1)), scale=np.array([1.0]))
        who = digest.entrants[entrant]
        out.setdefault(label, {})[family] = {
            "value": json_number(float(values.mean())),
            "ci": [json_number(lo[0]), json_number(hi[0])],
            "ci_method": methods[0],
            "n": int(n),
            "identity": who.model.key,
            "judge": who.judge_key,
        }
    return out
