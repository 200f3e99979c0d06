"""Classification labels kept as codes read like the dict of tuples they replace."""

from __future__ import annotations

import numpy as np

from routing.load.labels import LabelBuilder, LabelColumns


def built(labels: dict[int, tuple]) -> LabelColumns:
    builder = LabelBuilder()
    for row, label in labels.items():
        builder.add(row, label)
    return builder.take()


def test_label_columns_read_as_the_mapping_they_were_built_from() -> None:
    want = {
        9: ("A", "B", ("A", "B", "C")),
        2: (None, "B", ()),
        5: (1, 1.0, (True, 1, "1")),  # 1, 1.0, True and "1" are different labels as read
        7: (["x", "y"], "B", ("A", "B", "C")),
    }
    labels = built(want)
    assert labels == want and dict(labels) == want
    assert list(labels) == [2, 5, 7, 9] and len(labels) == 4
    assert labels[5] == (1, 1.0, (True, 1, "1")) and type(labels[5][1]) is float and labels[5][2][0] is True
    assert 9 in labels and 3 not in labels and "x" not in labels
    assert len(labels.label_sets) == 3  # ("A", "B", "C") once


def test_renumbering_and_concatenation_keep_every_label_with_its_row() -> None:
    first = built({0: ("A", "A", ("A", "B")), 1: ("B", "A", ("A", "B")), 3: ("C", "C", ())})
    second = built({0: ("Z", "A", ("A", "Z")), 2: ("A", "A", ("A", "B"))})
    moved = first.renumbered(np.array([10, -1, 5, 4]))  # row 1 is not kept
    assert dict(moved) == {10: ("A", "A", ("A", "B")), 4: ("C", "C", ())}
    merged = LabelColumns.concat([moved, second.renumbered(np.array([0, -1, 7]))])
    assert dict(merged) == {
        10: ("A", "A", ("A", "B")),
        4: ("C", "C", ()),
        0: ("Z", "A", ("A", "Z")),
        7: ("A", "A", ("A", "B")),
    }
    assert list(merged) == [0, 4, 7, 10] and len(merged.label_sets) == 3
    assert dict(LabelColumns.concat([])) == {} and dict(LabelColumns.empty().renumbered(np.zeros(0))) == {}
