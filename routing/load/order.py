"""Table order: the order a :class:`~routing.load.table.ScoreTable` keeps its rows in — by entrant
(model name, identity key, then judge key, judge-free first), then item id.

One place for it, because two parts keep it: the loader that builds a table, and the writer of a
run's columnar copy, which stores the rows already in this order so that loading a judged night
(written in (model, item) order, its judges interleaved) needs no reordering pass over every column.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from eval.items.scores import JudgeIdentity
from routing.load.table import Entrant, ModelIdentity, make_entrants


def judge_key(judge: JudgeIdentity | None) -> str:
    """The judge's part of the entrant order ("" for judge-free rows, which come first)."""
    return "" if judge is None else judge.key()


def ordered_entrants(
    pairs: np.ndarray, identities: Sequence[ModelIdentity], judges: Sequence[JudgeIdentity | None], n_judges: int
) -> tuple[list[Entrant], np.ndarray]:
    """The entrants of the (identity * n_judges + judge) pair codes present, in table order — model
    name, identity key, then judge key (judge-free first) — and the entrant index of each pair code."""
    order = sorted(
        pairs.tolist(),
        key=lambda p: (
            (identities[p // n_judges].name, identities[p // n_judges].key),
            judge_key(judges[p % n_judges]),
        ),
    )
    rank = np.zeros(int(pairs.max()) + 1 if len(pairs) else 0, dtype=np.int32)
    rank[order] = np.arange(len(order), dtype=np.int32)
    return make_entrants([(identities[p // n_judges], judges[p % n_judges]) for p in order]), rank


def item_ranks(item_names: Sequence[str]) -> np.ndarray:
    """Each item code's place among the item ids sorted (int64, indexed by code)."""
    rank = np.zeros(len(item_names), dtype=np.int64)
    rank[sorted(range(len(item_names)), key=item_names.__getitem__)] = np.arange(len(item_names))
    return rank


def table_order(
    ident: np.ndarray,
    judge: np.ndarray,
    item: np.ndarray,
    identities: Sequence[ModelIdentity],
    judges: Sequence[JudgeIdentity | None],
    item_names: Sequence[str],
) -> tuple[np.ndarray | None, bool]:
    """(the permutation that puts a run's rows, given as identity, judge and item codes, in table order
    — None when they already are in it —, whether every (model identity, judge, item) key is unique).
    A run whose key repeats gets no permutation: it is merged from file order, which says which of
    the repeated rows came last."""
    n_judges = len(judges)
    pair = ident.astype(np.int64) * n_judges + judge
    _, rank = ordered_entrants(np.unique(pair), identities, judges, n_judges)
    position = rank[pair].astype(np.int64) * max(len(item_names), 1)
    del pair
    position += item_ranks(item_names)[item]
    if len(position) < 2 or bool((position[1:] > position[:-1]).all()):
        return None, True
    order = np.argsort(position, kind="stable")
    position = position[order]
    unique = bool((position[1:] > position[:-1]).all())
    return (order if unique else None), unique
