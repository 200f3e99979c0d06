"""The JSON object each judge contract asks for, as a JSON Schema per contract.

Built from the same constants the prompts quote and the parse ladder checks against (score
bounds, grounding sources, context labels, probe behaviours, claim labels), so the three cannot
drift apart; ``judge.prompts.prompt_version`` hashes a contract's schema with its templates. A
server that supports constrained decoding (a ``response_format`` / grammar) can be given the
schema, so a small judge cannot write a label outside the set. The ladder stays lenient where the
schema is strict (aliases, ``8分``, Chinese labels): the schema is what is asked, the ladder what is
accepted.
"""

from __future__ import annotations

import copy
from types import MappingProxyType
from typing import Any

from judge.rubric import CONTEXT_LABELS, DIMENSIONS, GROUNDING_SOURCES, SCORE_MAX, SCORE_MIN
from judge.verdicts import CLAIM_LABELS, PROBE_BEHAVIOR_LABELS

_STRINGS = {"type": "array", "items": {"type": "string"}}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    """An object with exactly these properties, all required (what the contract's output spec lists)."""
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _rubric(**extra: Any) -> dict[str, Any]:
    return _object(
        {
            **{name: {"type": "integer", "minimum": SCORE_MIN, "maximum": SCORE_MAX} for name in DIMENSIONS},
            "rationale": {"type": "string"},
            "grounding_source": {"enum": list(GROUNDING_SOURCES)},
            "warnings_present": _STRINGS,
            **extra,
            "flags": _STRINGS,
        }
    )


OUTPUT_SCHEMAS = MappingProxyType(
    {
        "reference": _rubric(),
        "criteria": _rubric(context_awareness={"enum": list(CONTEXT_LABELS)}, seeks_clarification={"type": "boolean"}),
        "criteria_items": _object(
            {
                "items": {
                    "type": "array",
                    "items": _object(
                        {
                            "id": {"type": "string", "pattern": "^[TWN][1-9][0-9]*$"},
                            "met": {"type": "boolean"},
                            "evidence": {"type": "string"},
                        }
                    ),
                },
                "flags": _STRINGS,
            }
        ),
        "probe": _object(
            {
                "verdict": {"enum": ["success", "failure"]},
                "behavior": {"enum": list(PROBE_BEHAVIOR_LABELS)},
                "rationale": {"type": "string"},
            }
        ),
        "hallu": _object(
            {
                "claims": {
                    "type": "array",
                    "items": _object({"claim": {"type": "string"}, "label": {"enum": list(CLAIM_LABELS)}}),
                }
            }
        ),
    }
)


def output_schema(contract: str) -> dict[str, Any]:
    """The JSON Schema of the contract's verdict object; ValueError naming the known contracts otherwise."""
    try:
        return copy.deepcopy(OUTPUT_SCHEMAS[contract])
    except KeyError:
        raise ValueError(f"unknown judge contract {contract!r}; known: {', '.join(OUTPUT_SCHEMAS)}") from None
