"""A judge contract's one declaration: :class:`ContractSpec`.

A contract is what the judge is asked and how its reply becomes a score. Everything about one is
named in its ``SPEC`` — a module of ``judge/contracts/`` named after the contract — and
``judge.contracts.table`` collects them; nothing else dispatches on a contract's name::

    SPEC = ContractSpec(
        name="probe",                          # the module's name; what a gold type names
        template=TEMPLATE,                     # system, user and output-spec text
        build=probe_messages,                  # (item, answer) → the judge's messages
        schema=SCHEMA,                         # the verdict object as JSON Schema
        parse=reply_parser(parse_probe),       # (item, reply) → verdict | ParseFailure
        verdict=ProbeVerdict,                  # what ``parse`` returns on success
        score=probe_score,                     # verdict → Score (a contract a gold type names)
        unjudged=probe_unjudged,               # the 0 score's parts when the judge is not called
        constants=probe_constants,             # scoring numbers outside the text (hashed)
        request_schema=None,                   # (item, ordered) → one request's narrower schema
    )

``version()`` = first 12 hex of sha256 over the contract's templates, the re-ask template,
``judge.rubric.rubric_constants()``, the verdict schema and ``constants()`` (``criteria_items``:
its points, ``probe``: its behaviour labels): changing any of them changes every judged score's
``JudgeIdentity``, so results judged differently are never merged (and a cached verdict of an
older prompt, without the labels a newer one asks, is never reused as if it had them).

The schema is built from the same constants the prompt quotes and the parser checks (score bounds,
grounding sources, context labels, probe behaviours, claim labels), so the three cannot drift
apart. A server that supports constrained decoding (a ``response_format`` / grammar) can be given
it (``judge.contracts.table.output_schema``), so a small judge cannot write a label outside the
set. The parse ladder stays lenient where the schema is strict (aliases, ``8分``, Chinese labels):
the schema is what is asked, the ladder what is accepted.

``request_schema`` narrows the schema for one item where the verdict's shape depends on it
(``criteria_items``: exactly that item's criterion ids, so an empty or partial verdict cannot be
decoded); ``ordered`` asks for the form a grammar holds best (each id in its place). It derives from
``schema`` and the item, so it is not hashed apart: a request carries its schema, and so its cache key.

A contract with ``score`` grades an item on its own and may be named by a gold type
(``eval.gold_types``); one without (``criteria_items``, ``hallu``) is asked beside such a contract
and its verdict is added to that score by the stage that asks it (``pool.score``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from eval.items import Item
from eval.items.scores import JudgeIdentity, Score
from judge.contracts.framing import REASK_USER, Message, reask_messages
from judge.rubric import Verdict, rubric_constants

Contract = str  # a name in judge.contracts.table.CONTRACT_SPECS
Builder = Callable[[Item, str], tuple[Message, ...]]
Parser = Callable[[Item, str], Any]
Scorer = Callable[[Item, str, Any, JudgeIdentity, bool], Score]
Unjudged = Callable[[Item, str], tuple[dict[str, Any], dict[str, Any]]]
RequestSchema = Callable[[Item, bool], Mapping[str, Any]]

STRING_LIST: Mapping[str, Any] = {"type": "array", "items": {"type": "string"}}
_NAME = re.compile(r"[a-z][a-z0-9_]*")


def object_schema(properties: dict[str, Any]) -> dict[str, Any]:
    """An object with exactly these properties, all required (what the contract's output spec lists)."""
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def reply_parser(parse: Callable[[str], Any]) -> Parser:
    """A parser that needs only the reply, as a contract's ``parse`` (which is also given the item)."""
    return lambda item, reply: parse(reply)


@dataclass(frozen=True)
class ContractTemplate:
    """The system message, the user message (``str.format`` fields) and the output spec a re-ask repeats."""

    system: str
    user: str
    output_spec: str


@dataclass(frozen=True)
class ContractSpec:
    """One judge contract (module doc). ``score`` and ``unjudged`` come together: a contract that
    grades an item says both how a verdict scores and what a 0 without a verdict carries."""

    name: str
    template: ContractTemplate
    build: Builder
    schema: Mapping[str, Any]
    parse: Parser
    verdict: type
    score: Scorer | None = None
    unjudged: Unjudged | None = None
    constants: Callable[[], Mapping[str, Any]] | None = None
    request_schema: RequestSchema | None = None

    def __post_init__(self) -> None:
        where = f"judge contract {self.name!r} (judge/contracts/{self.name}.py)"
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(f"{where}: name must be lowercase letters, digits and _, starting with a letter")
        if not isinstance(self.template, ContractTemplate) or "{fenced_answer}" not in self.template.user:
            raise ValueError(f"{where}: template must be a ContractTemplate whose user message has {{fenced_answer}}")
        if self.schema.get("type") != "object" or not self.schema.get("properties"):
            raise ValueError(f"{where}: schema must be a JSON Schema object with properties (object_schema)")
        if (self.score is None) != (self.unjudged is None):
            raise ValueError(f"{where}: score and unjudged are declared together (both or neither)")

    @property
    def rubric(self) -> bool:
        """The verdict is the four-dimension rubric (``judge.rubric.Verdict``)."""
        return self.verdict is Verdict

    @property
    def grades(self) -> bool:
        """The verdict scores an item on its own, so a gold type may name this contract."""
        return self.score is not None

    def without_verdict(self, item: Item, answer_text: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """(metrics, extra details) of an answer scored 0 without asking the judge (``unjudged``)."""
        if self.unjudged is None:
            raise ValueError(f"judge contract {self.name!r} grades no item on its own: it has no 0 without a verdict")
        return self.unjudged(item, answer_text)

    def schema_for(self, item: Item | None, ordered: bool = False) -> Mapping[str, Any]:
        """The schema a request about ``item`` is constrained to: ``request_schema`` when the contract
        narrows it per item, else the verdict ``schema`` (module doc)."""
        if item is None or self.request_schema is None:
            return self.schema
        return self.request_schema(item, ordered)

    def messages(self, **fields: str) -> tuple[Message, ...]:
        """The system message and the user template filled with ``fields``."""
        return (
            {"role": "system", "content": self.template.system},
            {"role": "user", "content": self.template.user.format(**fields)},
        )

    def reask(self, messages: tuple[Message, ...], bad_reply: str, reason: str | None = None) -> tuple[Message, ...]:
        """``messages``, the unparseable reply, and one request for only this contract's JSON object."""
        return reask_messages(self.template.output_spec, messages, bad_reply, reason)

    def version(self) -> str:
        """sha256 (first 12 hex) of the templates, the re-ask template, the schema and the scoring constants."""
        material: dict[str, object] = {
            "contract": self.name,
            "system": self.template.system,
            "user": self.template.user,
            "output": self.template.output_spec,
            "reask": REASK_USER,
            "rubric": rubric_constants(),
            "schema": self.schema,
        }
        if self.constants is not None:
            material["scoring"] = self.constants()
        blob = json.dumps(material, ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]
