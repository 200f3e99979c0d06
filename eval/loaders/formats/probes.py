"""Hallucination-probe YAML: ``probes: [{id, probe_kind, expected_behavior, question, provenance, validity}]``.

``expected_behavior`` is the gold: ``abstain`` (the entity does not exist) or ``refute`` (the
premise is false). Only ``validity: verified`` probes are scorable; the others are loaded with
``scorable=False`` and the reason, so a summary can list them. The task is the file's stem. A
one-level ``domain`` (``cardiology``) is kept as ``meta["system"]``; the item's domain must be
two-level, so it stays None unless the file gives ``system:topic``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eval.gold_checks import DOMAIN_PATTERN, PROBE_BEHAVIOURS
from eval.items import Item
from eval.loaders.base import Loader, Record
from eval.loaders.yaml_records import yaml_records

_STRUCTURAL = ("id", "question", "expected_behavior", "domain", "track")


def validity_fields(record: Record) -> dict[str, Any]:
    """``scorable``/``skip_reason`` from the record's ``validity``: only ``verified`` is scored."""
    validity = record.data.get("validity")
    if validity == "verified":
        return {"scorable": True, "skip_reason": None}
    if validity is None:
        return {"scorable": False, "skip_reason": "no validity field; only validity: verified items are scored"}
    return {"scorable": False, "skip_reason": f"validity is {validity!r}; only validity: verified items are scored"}


def recognise(sample: Any) -> bool:
    return isinstance(sample, dict) and isinstance(sample.get("probes"), list)


def load(path: Path, suite: str) -> Iterator[Item]:
    task = path.stem
    _, records = yaml_records(path, "probes")
    for record in records:
        local_id = record.require("id", (str, int))
        question = record.require("question")
        behaviour = record.require("expected_behavior")
        if behaviour not in PROBE_BEHAVIOURS:
            raise record.fail("expected_behavior", f"must be one of {list(PROBE_BEHAVIOURS)}, got {behaviour!r}")
        domain = record.data.get("domain")
        meta = {key: value for key, value in record.data.items() if key not in _STRUCTURAL}
        if isinstance(domain, str) and not DOMAIN_PATTERN.match(domain):
            meta["system"], domain = domain, None
        yield record.build(
            id=Item.make_id(suite, task, str(local_id)),
            suite=suite,
            track="orchestration",
            task=task,
            gold_type="probe",
            question=question,
            gold=behaviour,
            domain=domain,
            **validity_fields(record),
            meta=meta,
        )


LOADER = Loader(
    name="probes",
    description="hallucination probes YAML: probes with expected_behavior abstain|refute; "
    "only validity: verified scored",
    suffixes=(".yaml", ".yml"),
    recognise=recognise,
    load=load,
)
