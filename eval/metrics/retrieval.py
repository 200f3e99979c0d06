"""Retrieval metrics over ranked id lists (catalogue items 7, 8 and 27)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from eval._checks import require_int, require_mapping, require_sequence


def _query_lists(index: int, query: Any) -> tuple[Sequence[Hashable], Sequence[Hashable]]:
    require_mapping(f"queries[{index}]", query)
    for key in ("retrieved", "relevant"):
        if key not in query:
            raise ValueError(f"queries[{index}] has no {key!r} key")
    retrieved = require_sequence(f"queries[{index}]['retrieved']", query["retrieved"])
    relevant = require_sequence(f"queries[{index}]['relevant']", query["relevant"])
    return retrieved, relevant


def recall_at_k(retrieved: list[Hashable], relevant: list[Hashable], k: int) -> float:
    """|distinct(retrieved[:k]) ∩ relevant| / |distinct(relevant)|; 0.0 when relevant is empty."""
    require_sequence("retrieved", retrieved)
    require_sequence("relevant", relevant)
    require_int("k", k, minimum=0)
    relevant_ids = set(relevant)
    if not relevant_ids:
        return 0.0
    return len(set(retrieved[:k]) & relevant_ids) / len(relevant_ids)


def hit_rate(queries: list[dict[str, Any]], k: int) -> list[Any]:
    """[hits / #queries, ascending indices of the queries with no relevant id in their top k].

    With no queries: [0.0, []].
    """
    require_sequence("queries", queries)
    require_int("k", k, minimum=0)
    if not queries:
        return [0.0, []]
    missed = []
    for index, query in enumerate(queries):
        retrieved, relevant = _query_lists(index, query)
        relevant_ids = set(relevant)
        if not any(doc in relevant_ids for doc in retrieved[:k]):
            missed.append(index)
    return [(len(queries) - len(missed)) / len(queries), missed]


def mean_reciprocal_rank(queries: list[dict[str, Any]]) -> float:
    """Mean of 1/r, r the 1-based rank of the first relevant retrieved id (0 if none); 0.0 if no queries."""
    require_sequence("queries", queries)
    if not queries:
        return 0.0
    total = 0.0
    for index, query in enumerate(queries):
        retrieved, relevant = _query_lists(index, query)
        relevant_ids = set(relevant)
        for rank, doc in enumerate(retrieved, start=1):
            if doc in relevant_ids:
                total += 1.0 / rank
                break
    return total / len(queries)
