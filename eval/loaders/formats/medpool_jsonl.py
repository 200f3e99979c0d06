"""medpool's own item format: JSON lines, one item per line (UTF-8; blank lines are ignored).

Write suites in this format when they fit no other loader. Each line is one JSON object:

=============  ========  ============================================================================
field          required  meaning
=============  ========  ============================================================================
id             yes       local id (string or integer), unique in the suite; the item's stable id is
                         ``<suite>/<task>/<id>``
task           yes       task name, no "/" or spaces (e.g. ``single_choice``, ``herb_dosage``)
track          yes       ``capability`` (reference-answer tasks), ``specialty`` (criteria golds),
                         ``orchestration`` (routing, tool decision, probes), ``tcm`` or ``exam``;
                         ``live`` only in the items a live run writes (``pool.live``)
gold_type      yes       any gold type declared in ``eval.gold_types`` (reference, criteria,
                         single_choice, cloze, classification, probe, routing, ...)
question       one of    the question, sent to the model exactly as written
messages       the two   OpenAI chat messages ``[{"role": "system"|"user"|"assistant", "content"}]``,
                         ending with the user's turn
options        no        ``{"A": "text", ...}`` or ``[["A", "text"], ...]``; shown under the question
                         as ``A. text`` lines; required for single_choice and multi_choice
gold           yes       the gold, shaped by gold_type (see ``eval.gold_types``): a string, a list of
                         option labels or labels, an object (criteria, doses, CHIP case), ...
domain         no        two-level specialty ``"system:topic"`` (e.g. ``"cardiology:hypertension"``)
suite          no        suite name; default: ``suite:`` of the nearest ``medpool-suite.yaml``,
                         else the folder's name
scorable       no        default ``true``; ``false`` lists the item as skipped instead of running it
skip_reason    with      why the item is not scorable (required exactly when ``scorable`` is false)
               false
meta           no        any JSON object, carried through read-only (e.g. ``{"labels": [...]}`` for
                         classification, option sets of a CHIP case, provenance)
check          no        ``"sql"`` or ``"api_call"`` (reference items only): score the answer by
                         that objective check, the judge's verdict kept beside (see ``eval.items``)
max_tokens     no        the answer's token budget: a request sends the smaller of this and the
                         model's ``max_tokens`` (a choice item needs a letter, not 256 tokens of a
                         small model repeating itself). Part of the request, so of the cache key
=============  ========  ============================================================================

Example::

    {"id": "sc_001", "task": "single_choice", "track": "exam", "gold_type": "single_choice",
     "question": "妊娠期禁用的降压药是？", "options": {"A": "拉贝洛尔", "B": "依那普利"}, "gold": "B",
     "domain": "cardiology:hypertension"}

(one line in the file). Unknown fields are an error, so a misspelt ``golds`` cannot pass silently.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eval.items import Item
from eval.loaders.base import Loader, read_json_lines

REQUIRED = ("id", "task", "track", "gold_type", "gold")
OPTIONAL = (
    "suite",
    "question",
    "messages",
    "options",
    "domain",
    "scorable",
    "skip_reason",
    "meta",
    "check",
    "max_tokens",
)
_HINT = "see the medpool JSONL format in eval/loaders/formats/medpool_jsonl.py"


def recognise(sample: Any) -> bool:
    return isinstance(sample, dict) and "gold_type" in sample


def load(path: Path, suite: str) -> Iterator[Item]:
    for record in read_json_lines(path):
        data = record.data
        unknown = sorted(set(data) - set(REQUIRED) - set(OPTIONAL))
        if unknown:
            raise record.fail(unknown[0], "unknown field", f"allowed fields: {', '.join(REQUIRED + OPTIONAL)}")
        local_id = record.require("id", (str, int), hint=_HINT)
        for key in ("task", "track", "gold_type"):
            record.require(key, hint=_HINT)
        if data.get("gold") is None:
            raise record.fail("gold", "missing", _HINT)
        if "meta" in data and not isinstance(data["meta"], dict):
            raise record.fail("meta", f"must be an object, got {type(data['meta']).__name__}")
        item_suite = record.require("suite", hint=_HINT) if "suite" in data else suite
        yield record.build(
            id=Item.make_id(item_suite, data["task"], str(local_id)),
            suite=item_suite,
            track=data["track"],
            task=data["task"],
            gold_type=data["gold_type"],
            question=data.get("question"),
            messages=data.get("messages"),
            options=data.get("options"),
            gold=data["gold"],
            domain=data.get("domain"),
            scorable=data.get("scorable", True),
            skip_reason=data.get("skip_reason"),
            meta=data.get("meta", {}),
            check=data.get("check"),
            max_tokens=data.get("max_tokens"),
        )


LOADER = Loader(
    name="medpool",
    description="medpool's own JSONL item format (id, task, track, gold_type, question|messages, options, gold, ...)",
    suffixes=(".jsonl",),
    recognise=recognise,
    load=load,
)
