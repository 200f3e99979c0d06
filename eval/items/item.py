"""The evaluation item: one immutable record per question, whatever file format it came from.

Every loader turns its format into ``Item``; the scheduler sends ``chat_messages()`` (chat models)
or ``completion_prompt()`` (base models) and the scorer registry picks a scorer by ``gold_type``.
The question text is kept exactly as the file gave it: no stripping, no whitespace collapsing
(collapsed whitespace changes what the candidate is asked: a table or a listing loses its shape).

Gold shapes, by ``gold_type``, are declared with each type in ``eval.gold_types`` (``shape``, and
the ``check_gold`` run when the item is built); lists become tuples, objects read-only mappings, so
a gold cannot be mutated by a scorer.

An item may declare an objective ``check`` (``CHECKS``) that scores its answer without a judge:
``"sql"`` runs the reference's and the answer's SQL on the same synthetic database
(``eval.objective.sql.check``), ``"api_call"`` compares the call in the answer with the reference's
(``eval.objective.api_call.check``). Only reference items can declare one: both checks read the reference answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, get_args

from eval.gold_checks import DOMAIN_PATTERN, GoldContext
from eval.gold_types import GOLD_TYPE_SPECS, GOLD_TYPES
from eval.items.broad_areas import name_problem as broad_area_problem

Track = Literal["capability", "specialty", "orchestration", "tcm", "exam"]
GoldType = str  # a name declared in eval.gold_types (GOLD_TYPES)
# The track of a live item: a question whose reference answer a reference agent gave tonight. No suite
# declares it; a live run writes such items itself (``pool.live``), and they form a family of their own.
LiveTrack = Literal["live"]
LIVE_TRACK: LiveTrack = "live"

# Objective checks an item may declare (see the module docstring).
Check = Literal["sql", "api_call"]
CHECKS: tuple[str, ...] = get_args(Check)
TRACKS: tuple[str, ...] = get_args(Track)  # the tracks a suite declares
ITEM_TRACKS: tuple[str, ...] = (*TRACKS, LIVE_TRACK)  # the tracks an item may carry
CHAT_ROLES = ("system", "user", "assistant")
_NAME_PATTERN = re.compile(r"^[^/\s]+$")


class ItemError(ValueError):
    """An item that cannot be built; ``field`` names the offending field (loaders add path:line)."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.message = message


@dataclass(frozen=True)
class Source:
    """Where an item came from: the file as the loader was given it, and the 1-based line."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def freeze(value: Any) -> Any:
    """Deep read-only copy: mappings → MappingProxyType over a dict copy, lists/tuples → tuples."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: freeze(inner) for key, inner in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(inner) for inner in value)
    return value


def thaw(value: Any) -> Any:
    """The inverse of ``freeze`` for JSON: read-only mappings → dicts, tuples → lists."""
    if isinstance(value, Mapping):
        return {key: thaw(inner) for key, inner in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(inner) for inner in value]
    return value


@dataclass(frozen=True)
class Item:
    """One evaluation item. Immutable: containers are tuples and read-only mappings (see ``freeze``).

    ``id`` is ``suite/task/local_id`` and stable across runs and machines (it names no absolute path).
    Exactly one of ``question`` and ``messages`` is set. ``options`` are (label, text) pairs shown to
    the model under the question. ``scorable=False`` items carry a ``skip_reason`` and are listed,
    not run. ``domain`` is a two-level ``system:topic`` specialty or None. ``check`` names the
    objective check that scores the answer beside the judge (reference items only), or None.
    """

    id: str
    suite: str
    track: Track | LiveTrack
    task: str
    gold_type: GoldType
    gold: Any = field(hash=False)
    source: Source
    question: str | None = None
    messages: tuple[Mapping[str, str], ...] | None = field(default=None, hash=False)
    options: tuple[tuple[str, str], ...] | None = None
    domain: str | None = None
    scorable: bool = True
    skip_reason: str | None = None
    meta: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), hash=False)
    check: Check | None = None
    max_tokens: int | None = None  # the answer budget the item needs; a request sends min(model's, this)

    @staticmethod
    def make_id(suite: str, task: str, local_id: str) -> str:
        return f"{suite}/{task}/{local_id}"

    @property
    def local_id(self) -> str:
        return self.id[len(self.suite) + len(self.task) + 2 :]

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: normalise containers once, here
        for name in ("suite", "task"):
            value = getattr(self, name)
            if not isinstance(value, str) or not _NAME_PATTERN.match(value):
                raise ItemError(name, f"must be a non-empty string without '/' or spaces, got {value!r}")
        prefix = f"{self.suite}/{self.task}/"
        if not isinstance(self.id, str) or not self.id.startswith(prefix) or len(self.id) == len(prefix):
            raise ItemError("id", f"must be '{prefix}<local id>', got {self.id!r}")
        if self.track not in ITEM_TRACKS:
            raise ItemError("track", f"must be one of {list(ITEM_TRACKS)}, got {self.track!r}")
        if self.gold_type not in GOLD_TYPES:
            raise ItemError("gold_type", f"must be one of {list(GOLD_TYPES)}, got {self.gold_type!r}")
        if (self.question is None) == (self.messages is None):
            raise ItemError("question", "give exactly one of question and messages")
        if self.question is not None and (not isinstance(self.question, str) or not self.question.strip()):
            raise ItemError("question", "must be a non-empty string")
        if self.messages is not None:
            set_(self, "messages", self._checked_messages(self.messages))
        if self.options is not None:
            set_(self, "options", self._checked_options(self.options))
        if self.domain is not None and (not isinstance(self.domain, str) or not DOMAIN_PATTERN.match(self.domain)):
            raise ItemError(
                "domain", f'must be a "system:topic" slug such as "cardiology:hypertension", got {self.domain!r}'
            )
        if not isinstance(self.scorable, bool):
            raise ItemError("scorable", "must be true or false")
        if self.scorable == (self.skip_reason is not None):
            raise ItemError("skip_reason", "required exactly when the item is not scorable")
        if not isinstance(self.source, Source):
            raise ItemError("source", "must be a Source(path, line)")
        if not isinstance(self.meta, Mapping):
            raise ItemError("meta", "must be an object")
        if "broad_area" in self.meta and (problem := broad_area_problem(self.meta["broad_area"])):
            raise ItemError("meta.broad_area", problem)  # it names a leaderboard bucket (eval.items.broad_areas)
        set_(self, "meta", freeze(self.meta))
        set_(self, "gold", freeze(self.gold))
        context = GoldContext(
            option_labels=tuple(label for label, _ in self.options) if self.options else None,
            option_texts=tuple(text for _, text in self.options) if self.options else None,
            meta=self.meta,
        )
        problem = GOLD_TYPE_SPECS[self.gold_type].check_gold(self.gold, context)
        if problem:
            raise ItemError("gold", f"{self.gold_type} gold {problem}")
        if self.max_tokens is not None and (
            isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1
        ):
            raise ItemError(
                "max_tokens", f"must be an integer >= 1 (the answer's token budget) or absent, got {self.max_tokens!r}"
            )
        if self.check is not None:
            if self.check not in CHECKS:
                raise ItemError("check", f"must be one of {list(CHECKS)} or absent, got {self.check!r}")
            if self.gold_type != "reference":
                raise ItemError(
                    "check",
                    f"only reference items can declare a check (it reads the reference answer), not {self.gold_type}",
                )

    @staticmethod
    def _checked_messages(messages: Any) -> tuple[Mapping[str, str], ...]:
        if isinstance(messages, (str, Mapping)) or not isinstance(messages, Sequence) or not messages:
            raise ItemError("messages", 'must be a non-empty list of {"role", "content"} objects')
        checked = []
        for index, message in enumerate(messages):
            where = f"messages[{index}]"
            if not isinstance(message, Mapping) or set(message) != {"role", "content"}:
                raise ItemError(where, 'must be an object with exactly the keys "role" and "content"')
            if message["role"] not in CHAT_ROLES:
                raise ItemError(f"{where}.role", f"must be one of {list(CHAT_ROLES)}, got {message['role']!r}")
            if not isinstance(message["content"], str):
                raise ItemError(f"{where}.content", "must be a string")
            checked.append(MappingProxyType({"role": message["role"], "content": message["content"]}))
        if checked[-1]["role"] != "user":
            raise ItemError("messages", "the last message must be the user's (the model answers it)")
        return tuple(checked)

    @staticmethod
    def _checked_options(options: Any) -> tuple[tuple[str, str], ...]:
        pairs = tuple(options.items()) if isinstance(options, Mapping) else options
        if isinstance(pairs, str) or not isinstance(pairs, Sequence) or not pairs:
            raise ItemError("options", 'must be a non-empty {"A": "text", ...} object or list of [label, text] pairs')
        checked = []
        for index, pair in enumerate(pairs):
            if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:
                raise ItemError(f"options[{index}]", "must be a [label, text] pair")
            label, text = pair
            if not isinstance(label, str) or not label.strip() or not isinstance(text, str) or not text.strip():
                raise ItemError(f"options[{index}]", "label and text must be non-empty strings")
            checked.append((label, text))
        labels = [label for label, _ in checked]
        if len(set(labels)) != len(labels):
            raise ItemError("options", f"labels repeat: {labels}")
        return tuple(checked)

    def _options_block(self) -> str:
        return "\n".join(f"{label}. {text}" for label, text in self.options or ())

    def chat_messages(self) -> tuple[dict[str, str], ...]:
        """What a chat model receives: the question as one user message, or the given messages.

        Options, when present, follow the question (or the last user message) as ``"A. text"``
        lines after one newline. The original text is otherwise unchanged; fresh dicts are returned
        so a caller may mutate them freely.
        """
        if self.messages is None:
            turns = [{"role": "user", "content": self.question or ""}]
        else:
            turns = [dict(message) for message in self.messages]
        if self.options:
            turns[-1]["content"] = f"{turns[-1]['content']}\n{self._options_block()}"
        return tuple(turns)

    def completion_prompt(self) -> str:
        """What a base (completion) model receives: a plain-text prompt ending where the answer starts.

        Layout: ``问题：<question>\\n[<options>\\n]答案：``. For chat messages, system messages come
        first as plain paragraphs, then each user turn as ``问题：…`` and each assistant turn as
        ``答案：…`` on its own line, ending with ``答案：`` for the model to continue.
        """
        parts: list[str] = []
        for message in self.chat_messages():
            role, content = message["role"], message["content"]
            if role == "system":
                parts.append(f"{content}\n")
            elif role == "user":
                parts.append(f"问题：{content}\n")
            else:
                parts.append(f"答案：{content}\n")
        return "".join(parts) + "答案："

    def to_record(self) -> dict[str, Any]:
        """The item as one line of the project's own JSONL format (plain JSON types; round-trips)."""
        record: dict[str, Any] = {
            "id": self.local_id,
            "suite": self.suite,
            "task": self.task,
            "track": self.track,
            "gold_type": self.gold_type,
        }
        if self.messages is not None:
            record["messages"] = thaw(self.messages)
        else:
            record["question"] = self.question
        if self.options is not None:
            record["options"] = thaw(self.options)
        record["gold"] = thaw(self.gold)
        record["domain"] = self.domain
        if not self.scorable:
            record["scorable"] = False
            record["skip_reason"] = self.skip_reason
        if self.meta:
            record["meta"] = thaw(self.meta)
        if self.check is not None:
            record["check"] = self.check
        if self.max_tokens is not None:
            record["max_tokens"] = self.max_tokens
        return record
