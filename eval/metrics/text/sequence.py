"""Longest common subsequence, bit-parallel.

ROUGE-L on long answers is the one quadratic metric here. The textbook dynamic programme costs
len(a)·len(b) Python steps; the bit-vector recurrence of Allison & Dix (1986) / Hyyrö (2004) packs
one whole DP column into a Python int, so each symbol of ``b`` costs a handful of big-int
operations: V ← (V + (V & M[c])) | (V & ~M[c]), and LCS = number of zero bits of V.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def lcs_length(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """Length of the longest common subsequence of ``a`` and ``b`` (in order, gaps allowed)."""
    if len(a) < len(b):
        a, b = b, a  # the bit vector runs over the longer sequence: fewer big-int steps
    if not b:
        return 0
    masks: dict[Hashable, int] = {}
    for position, symbol in enumerate(a):
        masks[symbol] = masks.get(symbol, 0) | (1 << position)
    full = (1 << len(a)) - 1
    v = full
    for symbol in b:
        match = masks.get(symbol)
        if match:
            u = v & match
            v = ((v + u) | (v - u)) & full
    return len(a) - v.bit_count()


def lcs_length_dp(a: Sequence[Hashable], b: Sequence[Hashable]) -> int:
    """The textbook O(len(a)·len(b)) dynamic programme; kept as the reference for tests and benches."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]
