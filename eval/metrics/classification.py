"""Label-level accuracy: TCM-SD macro-F1 and accuracy by slice (catalogue item 28)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import repeat
from typing import Any

import numpy as np

from eval._checks import require_mapping, require_same_length, require_sequence


def _label_index(
    preds: Sequence[Hashable], golds: Sequence[Hashable], labels: Sequence[Hashable] | None
) -> list[Hashable]:
    if labels is None:
        try:
            return sorted(set(golds) | set(preds))
        except TypeError as exc:
            raise TypeError(
                f"labels of mixed or unhashable types cannot be sorted; pass labels= explicitly ({exc})"
            ) from None
    label_list = list(require_sequence("labels", labels))
    if not label_list:
        raise ValueError("labels must not be empty")
    if len(set(label_list)) != len(label_list):
        raise ValueError("labels must not repeat")
    return label_list


def macro_f1(
    preds: Sequence[Hashable], golds: Sequence[Hashable], labels: Sequence[Hashable] | None = None
) -> dict[str, float]:
    """TCM-SD scoring: accuracy = mean(pred == gold); macro-F1 = (1/|labels|) Σ_c F1_c, unweighted.

    Per class c: P = tp/(tp+fp), R = tp/(tp+fn), F1 = 2PR/(P+R), each 0 when its denominator is 0,
    so a label nobody predicts or needs still counts (with F1 = 0) in the mean, as in the recipe.
    ``labels=None`` means the sorted union of labels seen in golds and preds. A prediction outside
    ``labels`` is wrong and counts for no class; a gold outside ``labels`` is an error.
    """
    require_sequence("preds", preds)
    require_sequence("golds", golds)
    require_same_length("preds", preds, "golds", golds)
    if not golds:
        raise ValueError("golds must not be empty: accuracy over no instances is undefined")
    label_list = _label_index(preds, golds, labels)
    index = {label: i for i, label in enumerate(label_list)}
    count = len(golds)
    try:  # map over the bound dict methods: the lookups run in C, with no generator frame per item
        gold_codes = np.fromiter(map(index.__getitem__, golds), dtype=np.intp, count=count)
    except KeyError as exc:
        raise ValueError(f"gold label {exc.args[0]!r} is not in labels") from None
    pred_codes = np.fromiter(map(index.get, preds, repeat(-1)), dtype=np.intp, count=count)
    correct = pred_codes == gold_codes
    classes = len(label_list)
    tp = np.bincount(gold_codes[correct], minlength=classes).astype(float)
    predicted = np.bincount(pred_codes[pred_codes >= 0], minlength=classes).astype(float)
    actual = np.bincount(gold_codes, minlength=classes).astype(float)
    precision = np.divide(tp, predicted, out=np.zeros(classes), where=predicted > 0)
    recall = np.divide(tp, actual, out=np.zeros(classes), where=actual > 0)
    f1 = np.divide(2 * precision * recall, precision + recall, out=np.zeros(classes), where=(precision + recall) > 0)
    return {"accuracy": float(correct.mean()), "macro_f1": float(f1.sum() / classes)}


def slice_report(records: list[dict[str, Any]]) -> dict[str, Any]:
    """{"micro": correct/all, "macro": mean of per-slice accuracies, "worst": lowest slice (ties: alphabetical)}.

    With no records: {"micro": 0.0, "macro": 0.0, "worst": None}.
    """
    require_sequence("records", records)
    if not records:
        return {"micro": 0.0, "macro": 0.0, "worst": None}
    totals: dict[Any, list[int]] = {}
    for index, record in enumerate(records):
        require_mapping(f"records[{index}]", record)
        if "slice" not in record or "correct" not in record:
            raise ValueError(f"records[{index}] needs 'slice' and 'correct' keys")
        if record["correct"] not in (True, False):
            raise ValueError(f"records[{index}]['correct'] must be true/false, got {record['correct']!r}")
        counts = totals.setdefault(record["slice"], [0, 0])
        counts[0] += bool(record["correct"])
        counts[1] += 1
    accuracy = {name: correct / total for name, (correct, total) in totals.items()}
    try:
        worst = min(accuracy, key=lambda name: (accuracy[name], name))
    except TypeError:
        raise TypeError("slice names must be mutually comparable (e.g. all str) to break ties alphabetically") from None
    return {
        "micro": sum(correct for correct, _ in totals.values()) / len(records),
        "macro": sum(accuracy.values()) / len(accuracy),
        "worst": worst,
    }
