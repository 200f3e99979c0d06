"""Deterministic, judge-free generators of the orchestration sets: hallucination probes
(``probes``: invented entities, inverted warnings) and tool-decision items (``tool_decision``),
written in the formats their loaders read. ``python -m eval.generate --help``.
"""

from eval.generate.probes import false_premise_probes, nonexistent_probes, warning_sources
from eval.generate.tool_decision import tool_decision_items

__all__ = ["false_premise_probes", "nonexistent_probes", "tool_decision_items", "warning_sources"]
