"""Expected calibration error (catalogue item 12)."""

from __future__ import annotations

from eval._checks import require_int, require_real, require_same_length, require_sequence


def calibration_error(confidences: list[float], correct: list[bool], num_bins: int) -> float:
    """ECE = Σ_bins |accuracy(bin) − mean confidence(bin)| · |bin| / N, bin = min(⌊conf·B⌋, B − 1).

    0.0 with no items.
    """
    require_sequence("confidences", confidences)
    require_sequence("correct", correct)
    require_same_length("confidences", confidences, "correct", correct)
    bins_count = require_int("num_bins", num_bins, minimum=1)
    if not confidences:
        return 0.0
    sizes = [0] * bins_count
    hits = [0.0] * bins_count
    confidence_sums = [0.0] * bins_count
    for index, (confidence, outcome) in enumerate(zip(confidences, correct, strict=True)):
        conf = require_real(f"confidences[{index}]", confidence, low=0.0, high=1.0)
        if outcome not in (True, False):  # accepts bools and 1/0, rejects "yes", 2, None
            raise ValueError(f"correct[{index}] must be true/false or 1/0, got {outcome!r}")
        b = min(int(conf * bins_count), bins_count - 1)
        sizes[b] += 1
        hits[b] += float(outcome)
        confidence_sums[b] += conf
    total = len(confidences)
    return sum(
        abs(hits[b] / sizes[b] - confidence_sums[b] / sizes[b]) * (sizes[b] / total)
        for b in range(bins_count)
        if sizes[b]
    )
