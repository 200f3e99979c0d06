"""Hallucination probes, built without a judge or a model, in the probe loader's format
(``eval/loaders/formats/probes.py``): ``nonexistent`` probes ask about an invented drug, disease or
guideline (``eval.generate.vocabulary``) and expect ``abstain``; they are ``validity: verified``
by construction. ``false_premise`` probes take a warning a criteria gold says an answer must give
(``must_warn``) and present it as unnecessary, expecting ``refute``; whether the inverted warning
really is a false premise in context is for a person to confirm, so they are ``needs_review`` (not
scored until someone sets ``validity: verified``).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import zip_longest
from typing import Any

from eval.generate.vocabulary import FAKE_ENTITIES, FALSE_PREMISE_TEMPLATES, NONEXISTENT_TEMPLATES
from eval.items import Item

DEFAULT_FALSE_PREMISES = 20


def nonexistent_probes() -> list[dict[str, Any]]:
    """One probe per invented entity, its question from the entity kind's templates in turn."""
    probes, used = [], {kind: 0 for kind in NONEXISTENT_TEMPLATES}
    for entity in FAKE_ENTITIES:
        templates = NONEXISTENT_TEMPLATES[entity.kind]
        template = used[entity.kind] % len(templates)
        used[entity.kind] += 1
        probes.append(
            {
                "id": f"nonexistent_{entity.kind}_{used[entity.kind]:02d}",
                "probe_kind": "nonexistent",
                "expected_behavior": "abstain",
                "question": templates[template].format(name=entity.name),
                "provenance": {
                    "fabricated_entity": entity.name,
                    "entity_kind": entity.kind,
                    "template": f"{entity.kind}/{template + 1}",
                    "note": "invented by medpool; it does not exist",
                },
                "validity": "verified",
            }
        )
    return probes


def warning_sources(items: Iterable[Item], limit: int = DEFAULT_FALSE_PREMISES) -> list[Item]:
    """Criteria items with a ``must_warn``, spread over body systems: a round robin over systems
    (sorted), each system's items in load order, at most ``limit``."""
    by_system: dict[str, list[Item]] = {}
    for item in items:
        if item.gold_type == "criteria" and item.gold.get("must_warn"):
            by_system.setdefault((item.domain or "").split(":", 1)[0], []).append(item)
    spread = [item for layer in zip_longest(*(by_system[s] for s in sorted(by_system))) for item in layer if item]
    return spread[:limit]


def false_premise_probes(sources: Iterable[Item]) -> list[dict[str, Any]]:
    """One probe per source item: its first ``must_warn`` presented as unnecessary (templates in turn)."""
    probes = []
    for number, item in enumerate(sources, 1):
        warning = item.gold["must_warn"][0]
        template = (number - 1) % len(FALSE_PREMISE_TEMPLATES)
        question = item.question if item.question is not None else item.chat_messages()[-1]["content"]
        probe: dict[str, Any] = {
            "id": f"false_premise_{number:02d}",
            "probe_kind": "false_premise",
            "expected_behavior": "refute",
            "question": FALSE_PREMISE_TEMPLATES[template].format(question=question.strip(), warning=warning),
        }
        if item.domain:
            probe["domain"] = item.domain
        probe["provenance"] = {
            "source_item": item.id,
            "inverted_warning": warning,
            "template": template + 1,
            "note": "a needed warning from the source item's must_warn, presented as unnecessary",
        }
        probe["validity"] = "needs_review"
        probes.append(probe)
    return probes
