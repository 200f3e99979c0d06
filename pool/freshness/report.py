"""What an audit leaves in its folder: ``freshness.json`` (every point's verdict, read by ``routing.build
--freshness`` and by runs whose pool file names it) and ``freshness/<domain>.md`` (per domain: the counts,
then a table a person reads, the ``drifted`` points first).

``freshness.json`` (``kind: medpool-freshness-audit``, ``schema_version: 1``)::

    generated_at, data[], pool, contract{name, prompt_version}, judges[{name, backend, model}],
    combined_by, counts{current, drifted, uncertain, points}, calls{sent, cached},
    domains{<domain>: {report, counts, points[{id, text, kinds[], source_refs[], item_ids[], verdict,
                                               current_guideline, note, split, failed, judges[...]}]}}

A domain's file is named after it with ``:`` as ``.`` (``cardiology.hypertension.md``); ``(none)`` (items
without a domain) is ``_none.md``. Nothing is ever written outside the audit folder.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from eval.files import atomic_write_text
from judge.contracts.table import prompt_version
from judge.parse.freshness import FRESHNESS_LABELS
from pool.freshness.attach import AUDIT_FILENAME, KIND
from pool.freshness.judging import PointVerdict
from pool.freshness.points import NO_DOMAIN
from pool.freshness.spec import CONTRACT, Prepared

SCHEMA_VERSION = 1
REPORTS_FOLDER = "freshness"
# Which verdicts a reader looks at first: the points to review, then the ones the judge could not place.
SHOWN_ORDER = ("drifted", "uncertain", "current")
LIMITS = (
    "The judge answers from its own knowledge, which has a training cutoff: `current` is not a check against "
    "a guideline published since, and `drifted` is a point for a person to review, not a correction. "
    "The suite itself is never changed."
)


def report_name(domain: str) -> str:
    """``freshness/<domain>.md`` with ``:`` as ``.`` (module doc)."""
    return f"{REPORTS_FOLDER}/{'_none' if domain == NO_DOMAIN else domain.replace(':', '.')}.md"


def counts(verdicts: Sequence[PointVerdict]) -> dict[str, int]:
    tally = Counter(v.verdict for v in verdicts)
    return {**{label: tally.get(label, 0) for label in FRESHNESS_LABELS}, "points": len(verdicts)}


def _by_domain(verdicts: Sequence[PointVerdict]) -> dict[str, list[PointVerdict]]:
    out: dict[str, list[PointVerdict]] = {}
    for verdict in verdicts:
        out.setdefault(verdict.point.domain, []).append(verdict)
    return out


def audit_document(prepared: Prepared, verdicts: Sequence[PointVerdict], calls: Mapping[str, int]) -> dict[str, Any]:
    """``freshness.json`` as a dict (module doc)."""
    return {
        "kind": KIND,
        "schema_version": SCHEMA_VERSION,
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "data": list(prepared.options["data"]),
        "pool": prepared.options["pool"],
        "contract": {"name": CONTRACT, "prompt_version": prompt_version(CONTRACT)},
        "judges": [{"name": j.name, "backend": j.backend, "model": j.model} for j in prepared.judges],
        "combined_by": "majority" if len(prepared.judges) > 1 else "single judge",
        "counts": counts(verdicts),
        "calls": dict(calls),
        "domains": {
            domain: {
                "report": report_name(domain),
                "counts": counts(found),
                "points": [v.to_json() for v in found],
            }
            for domain, found in _by_domain(verdicts).items()
        },
    }


def _cell(text: Any) -> str:
    """Table-safe Markdown: pipes escaped, newlines flattened, angle brackets as entities."""
    return (
        str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("<", "&lt;").replace(">", "&gt;")
    )


def domain_markdown(domain: str, document: Mapping[str, Any]) -> str:
    """``freshness/<domain>.md``: who judged what, the counts, then one row per gold point."""
    entry = document["domains"][domain]
    tally = entry["counts"]
    judges = ", ".join(f"`{_cell(j['name'])}` ({_cell(j['model'])})" for j in document["judges"])
    panel = f", combined by {document['combined_by']}" if len(document["judges"]) > 1 else ""
    rank = {label: index for index, label in enumerate(SHOWN_ORDER)}
    points = sorted(entry["points"], key=lambda p: rank[p["verdict"]])  # stable: suite order within a verdict
    lines = [
        f"# Gold freshness: {_cell(domain)}",
        "",
        (
            f"Suite: {', '.join(f'`{_cell(p)}`' for p in document['data'])}. Audited {document['generated_at']} "
            f"by {judges}{panel}; contract `{CONTRACT}` {document['contract']['prompt_version']}."
        ),
        "",
        "| current | drifted | uncertain | gold points |",
        "|---:|---:|---:|---:|",
        f"| {tally['current']} | {tally['drifted']} | {tally['uncertain']} | {tally['points']} |",
        "",
        LIMITS,
        "",
        "| gold point | verdict | guideline | note | item ids |",
        "|---|---|---|---|---|",
    ]
    for point in points:
        verdict = point["verdict"] + (" (no verdict)" if point["failed"] else " (split)" if point["split"] else "")
        lines.append(
            f"| {_cell(point['text'])} | {verdict} | {_cell(point['current_guideline'])} | {_cell(point['note'])} "
            f"| {', '.join(_cell(i) for i in point['item_ids'])} |"
        )
    return "\n".join(lines) + "\n"


def write_reports(folder: Path, document: Mapping[str, Any]) -> list[Path]:
    """Write ``freshness.json`` and one Markdown report per domain into ``folder``; the paths written."""
    (folder / REPORTS_FOLDER).mkdir(parents=True, exist_ok=True)
    written = []
    for domain, entry in document["domains"].items():
        path = folder / entry["report"]
        atomic_write_text(path, domain_markdown(domain, document))
        written.append(path)
    path = folder / AUDIT_FILENAME
    atomic_write_text(path, json.dumps(document, ensure_ascii=False, indent=1) + "\n")
    return [path, *written]
