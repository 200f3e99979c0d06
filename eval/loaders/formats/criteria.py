"""Criteria-gold YAML (the book-gold shape): ``questions: [{id, question, expected_domain, expected_topics, ...}]``.

No reference answer: the judge checks the answer against topics to cover (``expected_topics``),
warnings that must appear (``must_warn``) and things that must not be said (``must_not``). The task
is the file's stem; the domain is the first ``expected_domain`` entry (all of them are kept in
``meta["expected_domains"]`` when there are several).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eval.gold_checks import DOMAIN_PATTERN
from eval.items import Item
from eval.loaders.base import Loader
from eval.loaders.yaml_records import yaml_records

# Keys that belong to the judge's criteria contract; anything else unknown goes to meta.
GOLD_KEYS = (
    "expected_topics",
    "must_warn",
    "must_not",
    "doctor_expected_topics",
    "patient_must_not_phrases",
    "doctor_must_have_tags",
    "source_refs",
)
_STRUCTURAL = ("id", "question", "expected_domain")


def recognise(sample: Any) -> bool:
    entries = sample.get("questions") if isinstance(sample, dict) else None
    return isinstance(entries, list) and any(isinstance(e, dict) and "expected_topics" in e for e in entries[:1])


def load(path: Path, suite: str) -> Iterator[Item]:
    task = path.stem
    _, records = yaml_records(path, "questions")
    for record in records:
        local_id = record.require("id", (str, int))
        question = record.require("question")
        domains = record.require(
            "expected_domain", list, hint='a list of "system:topic" slugs, e.g. [cardiology:hypertension]'
        )
        if not domains or not all(isinstance(d, str) and DOMAIN_PATTERN.match(d) for d in domains):
            raise record.fail("expected_domain", f'must list "system:topic" slugs, got {domains!r}')
        for key in GOLD_KEYS:
            if key in record.data and not isinstance(record.data[key], list):
                raise record.fail(key, f"must be a list, got {type(record.data[key]).__name__}")
        record.require("expected_topics", list)
        gold = {key: record.data[key] for key in GOLD_KEYS if key in record.data}
        gold.setdefault("must_warn", [])
        gold.setdefault("must_not", [])
        meta = {key: value for key, value in record.data.items() if key not in GOLD_KEYS and key not in _STRUCTURAL}
        if len(domains) > 1:
            meta["expected_domains"] = domains
        yield record.build(
            id=Item.make_id(suite, task, str(local_id)),
            suite=suite,
            track="specialty",
            task=task,
            gold_type="criteria",
            question=question,
            gold=gold,
            domain=domains[0],
            meta=meta,
        )


LOADER = Loader(
    name="criteria",
    description="criteria-gold YAML: questions with expected_domain, expected_topics, must_warn, must_not",
    suffixes=(".yaml", ".yml"),
    recognise=recognise,
    load=load,
)
