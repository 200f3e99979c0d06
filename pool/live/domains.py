"""A live question's domain: the one its file gave, else the router's classifier's guess, marked inferred.

The classifier is the router's own (:class:`routing.serve.classifier.BucketClassifier`: k nearest
neighbours over character n-gram TF-IDF), fitted on every item with a domain in the suites the run
names (``--data``; by default the built-in demo suite). A guess keeps its confidence (the neighbours'
weighted share, ``meta.domain_confidence``); a question no training item resembles at all
(confidence 0) gets no domain rather than an arbitrary one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eval.items import Item
from pool.items_source import load_run_items
from pool.live.questions import LiveQuestion
from routing.serve.classifier import BucketClassifier, BucketPath
from routing.serve.texts import request_text


@dataclass(frozen=True)
class Domain:
    """A question's domain (None: none given, none inferred), whether it was inferred, and how surely."""

    name: str | None
    inferred: bool = False
    confidence: float | None = None


def question_domains(questions: Sequence[LiveQuestion], data: Sequence[str] | None) -> tuple[list[Domain], list[str]]:
    """Each question's :class:`Domain`, and notes for stderr (how many were inferred, from what)."""
    asked = [i for i, q in enumerate(questions) if q.domain is None]
    domains = [Domain(q.domain) for q in questions]
    if not asked:
        return domains, []
    where = "--data " + " ".join(data) if data else "the built-in demo suite"
    training = [item for item in load_run_items(data).items if item.domain]
    if not training:
        return domains, [f"warning: {where} has no item with a domain; {len(asked)} live question(s) get none"]
    classifier = BucketClassifier.fit(
        [_text(item) for item in training],
        [
            BucketPath(str(item.domain), f"specialty/system/{str(item.domain).split(':', 1)[0]}", "specialty")
            for item in training
        ],
    )
    codes, confidences = classifier.guess_many([request_text(_asked(questions[i].text)) for i in asked])
    for row, index in enumerate(asked):
        confidence = float(confidences[row, 0])
        name = classifier.names[0][codes[row, 0]] if confidence > 0 else None
        domains[index] = Domain(name, inferred=name is not None, confidence=round(confidence, 4))
    found = sum(domains[i].inferred for i in asked)
    return domains, [
        f"{found} of {len(asked)} live question(s) without a domain got one from the router's classifier "
        f"(fitted on {len(training)} item(s) of {where}; meta.domain_inferred)"
    ]


def _text(item: Item) -> str:
    """The item as the router reads a request (:func:`routing.serve.texts.request_text`)."""
    return request_text(item.chat_messages())


def _asked(question: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": question}]
