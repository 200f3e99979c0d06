"""Metrics over several samples or options per problem (catalogue items 9–11)."""

from __future__ import annotations

import math
from typing import Any

from eval._checks import require_int, require_mapping, require_real, require_sequence, require_str_sequence


def _logprob(name: str, value: Any) -> float:
    """A log-probability: a real number ≤ 0 in principle; −inf (probability 0) is allowed."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == -math.inf:
        return -math.inf
    return require_real(name, value)


def mean_pass_at_k(results: list[list[int]], k: int) -> float:
    """Mean unbiased pass@k = 1 − C(n−c, k)/C(n, k) over problems with n ≥ k (others skipped).

    Each result is [n, c]: n samples drawn, c of them correct. 0.0 when no problem remains.
    """
    require_sequence("results", results)
    require_int("k", k, minimum=1)
    scores = []
    for index, result in enumerate(results):
        require_sequence(f"results[{index}]", result)
        if len(result) != 2:
            raise ValueError(f"results[{index}] must be [n, c], got {len(result)} values")
        n = require_int(f"results[{index}][0] (n)", result[0], minimum=0)
        c = require_int(f"results[{index}][1] (c)", result[1], minimum=0)
        if c > n:
            raise ValueError(f"results[{index}]: c={c} correct exceeds n={n} samples")
        if n < k:
            continue
        scores.append(1.0 - math.comb(n - c, k) / math.comb(n, k))
    return sum(scores) / len(scores) if scores else 0.0


def majority_vote(answers: list[str]) -> str | None:
    """Most frequent answer after strip + lowercase (empties ignored); ties to the earliest first occurrence."""
    require_str_sequence("answers", answers)
    counts: dict[str, int] = {}  # insertion order = order of first occurrence
    for answer in answers:
        key = answer.strip().lower()
        if key:
            counts[key] = counts.get(key, 0) + 1
    best: str | None = None
    for key, count in counts.items():
        if best is None or count > counts[best]:
            best = key
    return best


def pick_option(options: list[dict[str, Any]]) -> Any:
    """Label of the option with the highest mean token log-probability; ties to the earliest option.

    Options with no logprobs are skipped; None when every option is skipped.
    """
    require_sequence("options", options)
    best_label, best_score = None, -math.inf
    found = False
    for index, option in enumerate(options):
        require_mapping(f"options[{index}]", option)
        if "label" not in option or "logprobs" not in option:
            raise ValueError(f"options[{index}] needs 'label' and 'logprobs' keys")
        logprobs = require_sequence(f"options[{index}]['logprobs']", option["logprobs"])
        if not logprobs:
            continue
        score = sum(_logprob(f"options[{index}]['logprobs'][{j}]", lp) for j, lp in enumerate(logprobs))
        score /= len(logprobs)
        if not found or score > best_score:
            best_label, best_score, found = option["label"], score, True
    return best_label
