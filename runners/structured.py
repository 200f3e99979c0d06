"""Constrained decoding: how a request's output JSON Schema reaches a server, one way per backend.

A request may carry ``output_schema`` (:class:`runners.base.GenerationRequest`): the JSON Schema the
answer must match (a judge's verdict object). A backend's ``structured_output`` setting says how its
server is told, so that a small model cannot answer outside that shape:

- ``json_schema``: OpenAI-compatible servers get ``response_format: {type: json_schema, json_schema:
  {name, schema, strict}}`` (OpenAI, vLLM, the llama.cpp C++ server); Ollama gets ``format: <schema>``.
  A server that answers such a request with a 400 (or 422) whose message names ``response_format`` or
  ``json_schema`` does not take it: the runner sends that request again without it, once, and from
  then on sends none to that endpoint (:func:`schema_refused`, :mod:`runners.refusable`);
- ``grammar``: a GBNF grammar built from the schema by llama-cpp-python's converter
  (``llama_cpp.llama_grammar.json_schema_to_gbnf``, what ``LlamaGrammar.from_json_schema`` uses), sent
  as ``grammar``: both managed llama.cpp engines and llama.cpp's own server take it. Two things are
  made explicit first (:func:`grammar_schema`), because a grammar is all a small model is held to: an
  integer's ``minimum``/``maximum``, which that converter ignores (a 0–10 score came back as 100),
  become the enum of the allowed integers; and free text is bounded — a string with no length, enum
  or pattern gets at most :data:`GRAMMAR_STRING_CHARS` characters, an array of strings at most
  :data:`GRAMMAR_STRING_ITEMS` — since a small model that starts rambling inside a string (measured:
  Gemma-3-270M repeating a prompt line in ``rationale``) otherwise runs to ``max_tokens`` and leaves
  the object unclosed;
- ``none``: the schema is not sent; the answer is asked for politely and repaired afterwards.

A request without ``output_schema`` is sent exactly as before, whatever the setting.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from runners.base import GenerationResponse
from runners.refusable import OptionalField

StructuredOutput = Literal["json_schema", "grammar", "none"]
STRUCTURED_OUTPUTS: tuple[str, ...] = StructuredOutput.__args__  # type: ignore[attr-defined]
SCHEMA_NAME = "verdict"  # response_format.json_schema.name: OpenAI requires one ([a-zA-Z0-9_-], ≤ 64)
# A refusal names the field it refuses: OpenAI/vLLM/llama.cpp messages say "response_format" or
# "json_schema"; a 400 for anything else (a bad model id, a too-long prompt) is not a refusal.
_REFUSAL = re.compile(r"response_format|json_schema|response format|json schema", re.IGNORECASE)
# The schema as an optional request field (runners.refusable): refused once, never sent again that run.
RESPONSE_FORMAT = OptionalField(
    "response_format",
    _REFUSAL,
    "verdicts from this endpoint are asked without a schema for the rest of the run "
    "(set structured_output: none on the backend to skip the first try)",
)
GRAMMAR_STRING_CHARS = 60  # a one-sentence rationale, a quoted piece of evidence: a 256-token verdict holds several
GRAMMAR_STRING_ITEMS = 8  # labels or flags listed in one array
GRAMMAR_ENUM_SPAN = 1000  # integer ranges up to this many values become an enum


def response_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    """OpenAI's ``response_format`` for ``schema`` (strict: the server must follow it exactly)."""
    return {"type": "json_schema", "json_schema": {"name": SCHEMA_NAME, "schema": dict(schema), "strict": True}}


def grammar(schema: Mapping[str, Any]) -> str:
    """The GBNF grammar llama.cpp decodes ``schema`` with (built once per schema), from :func:`grammar_schema`."""
    return _grammar_of(json.dumps(grammar_schema(schema), sort_keys=False, ensure_ascii=False))


def grammar_schema(schema: Any) -> Any:
    """``schema`` as the grammar holds it (module doc): integer ranges as enums, free text bounded."""
    if isinstance(schema, list):
        return [grammar_schema(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {key: grammar_schema(value) for key, value in schema.items()}
    kind = out.get("type")
    low, high = out.get("minimum"), out.get("maximum")
    if kind == "integer" and isinstance(low, int) and isinstance(high, int) and 0 <= high - low < GRAMMAR_ENUM_SPAN:
        return {"enum": list(range(low, high + 1))}
    if kind == "string" and not {"maxLength", "enum", "const", "pattern", "format"} & out.keys():
        out["maxLength"] = GRAMMAR_STRING_CHARS
    items = out.get("items")
    if kind == "array" and "maxItems" not in out and isinstance(items, Mapping) and items.get("type") == "string":
        out["maxItems"] = GRAMMAR_STRING_ITEMS
    return out


@functools.lru_cache(maxsize=64)  # a run sends a handful of schemas, each thousands of times
def _grammar_of(schema_json: str) -> str:
    try:
        from llama_cpp.llama_grammar import json_schema_to_gbnf
    except ImportError as exc:  # a remote backend set to grammar on a machine without the local extra
        raise RuntimeError(
            "structured_output: grammar builds its grammar with llama-cpp-python, which is not installed: "
            "run scripts/install.sh local, or set structured_output: json_schema (or none) on the backend"
        ) from exc
    return json_schema_to_gbnf(schema_json)


def schema_refused(response: GenerationResponse) -> bool:
    """The server refused the request because of its ``response_format`` (see the module doc)."""
    return RESPONSE_FORMAT.refused_by_name(response)
