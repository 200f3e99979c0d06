"""Answer flips between two nights: how often an unchanged question got a different answer.

An answer pair is *unchanged* when both runs' run stores (``run.sqlite``) hold an answer of the same
model to the same item under the same response-cache key — sha256 over the backend type, the
endpoint identity (``llamacpp://<weights sha256>/<chat format>`` for a managed server, the URL
otherwise) and the whole request (messages or prompt, every generation parameter): the same
question, asked the same way, of the same weights. Answers from the response cache in either run are
left out (a cache hit repeats the earlier text by construction). Per model::

    flip_rate = flipped / unchanged,  flipped = #unchanged pairs whose answer text differs

Text is compared exactly, byte for byte: greedy decoding of the same request on the same weights
has one right answer, so any difference — whitespace included — is the serving path (batching,
prefix reuse, a server build), and a normalised comparison would hide part of the noise this is
meant to show. At temperature 0 a rate above 0 is serving noise, not the model: a score change
of a model with many flips may be that noise (``deterministic: true`` on a managed llama.cpp
backend makes it 0, docs/pool-file.md). Sampled answers (``greedy`` false) flip by design.

Pure reads: two run folders in, one ``compare.json`` block out (:func:`answer_flips`); its lines
for ``compare.md`` (:func:`flip_lines`) and its table for the report (:func:`flips_html`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from routing.report.html import esc, table, td
from routing.report.markdown import md_text
from routing.serve.texts import ANSWER_STAGE, RUN_DB

MAX_EXAMPLES = 3  # flipped item ids kept per model, for a reader to look at
MAX_LINES = 8  # models listed in compare.md (most flips first); the rest are in compare.json

_FLIPPED = "NOT (n.cached OR b.cached) AND n.text IS NOT b.text"
# One pass over the pairs: counts per model and every flipped item id (the examples are picked from them).
_COUNTS = f"""
    SELECT n.model,
           SUM(NOT (n.cached OR b.cached)),
           SUM({_FLIPPED}),
           SUM(n.cached OR b.cached),
           group_concat(CASE WHEN {_FLIPPED} THEN n.item_id END, char(10))
    FROM new.results AS n JOIN base.results AS b
      ON b.model = n.model AND b.item_id = n.item_id AND b.stage = n.stage
    WHERE n.stage = '{ANSWER_STAGE}' AND n.status != 'infra_error' AND b.status != 'infra_error'
      AND n.cache_key IS NOT NULL AND n.cache_key = b.cache_key
    GROUP BY n.model ORDER BY n.model
"""
# A model's temperature is the same in all its requests: read it from one of them.
_TEMPERATURES = f"""
    SELECT m.model, (SELECT json_extract(r.request_json, '$.params.temperature') FROM new.results AS r
                     WHERE r.model = m.model AND r.stage = '{ANSWER_STAGE}' LIMIT 1)
    FROM (SELECT DISTINCT model FROM new.results) AS m
"""


def _uri(path: Path) -> str:
    """A read-only SQLite URI (a ``?`` or ``#`` in a folder name is quoted, not read as URI syntax)."""
    return f"file:{quote(path.resolve().as_posix())}?mode=ro"


def answer_flips(base_dir: Path, new_dir: Path) -> dict[str, Any]:
    """``{compared, reason, models: [{model, unchanged, flipped, flip_rate, cached, greedy, examples}]}``
    (module docstring); ``compared`` is false, with the reason, when a run store is missing or unreadable."""
    stores = {side: Path(d) / RUN_DB for side, d in (("base", base_dir), ("new", new_dir))}
    missing = [str(p) for p in stores.values() if not p.is_file()]
    if missing:
        return {"compared": False, "reason": f"no run store ({', '.join(missing)})", "models": []}
    try:
        with sqlite3.connect(":memory:", uri=True, timeout=10) as conn:
            conn.execute("ATTACH DATABASE ? AS base", (_uri(stores["base"]),))
            conn.execute("ATTACH DATABASE ? AS new", (_uri(stores["new"]),))
            counts = conn.execute(_COUNTS).fetchall()
            temperatures = dict(conn.execute(_TEMPERATURES).fetchall())
    except sqlite3.Error as exc:
        return {"compared": False, "reason": f"cannot read the run stores' answers ({exc})", "models": []}
    models = [
        {
            "model": model,
            "unchanged": int(unchanged or 0),
            "flipped": int(flipped or 0),
            "flip_rate": round(flipped / unchanged, 4) if unchanged else None,
            "cached": int(cached or 0),
            "greedy": temperatures.get(model) == 0,
            "examples": sorted((flipped_ids or "").split("\n"))[:MAX_EXAMPLES] if flipped else [],
        }
        for model, unchanged, flipped, cached, flipped_ids in counts
    ]
    return {"compared": True, "reason": None, "models": models}


def _rate(entry: Mapping[str, Any]) -> str:
    if entry["flip_rate"] is None:
        return "– (no fresh pair)"
    return f"{entry['flip_rate']:.1%} ({entry['flipped']}/{entry['unchanged']})"


def _shown(flips: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return sorted(flips.get("models") or [], key=lambda e: (-(e["flip_rate"] or 0.0), e["model"]))


def flip_lines(doc: Mapping[str, Any]) -> list[str]:
    """``compare.md``'s lines: each model's flip rate on unchanged items, most flips first."""
    flips = doc.get("flips") or {}
    if not flips.get("compared"):
        return ["", f"Answer flips not measured: {md_text(flips.get('reason') or 'no run stores')}"] if flips else []
    shown = _shown(flips)
    if not shown:
        return ["", "Answer flips: no answer of the same model to the same request in both runs"]
    lines = ["", "Answer flips on unchanged items (same request, same weights; fresh answers whose text differs):"]
    for entry in shown[:MAX_LINES]:
        sampled = "" if entry["greedy"] else " — sampled (temperature > 0): flips expected"
        lines.append(f"- {md_text(entry['model'])}: {_rate(entry)}{sampled}")
    if len(shown) > MAX_LINES:
        lines.append(f"- … {len(shown) - MAX_LINES} more in compare.json")
    return lines


def flips_html(doc: Mapping[str, Any]) -> str:
    """The report's "Answer flips" table (every text escaped by :func:`td` / :func:`esc`)."""
    flips = doc.get("flips") or {}
    if not flips.get("compared"):
        reason = flips.get("reason")
        return f'<p class="small muted">Answer flips not measured: {esc(reason)}</p>' if reason else ""
    shown = _shown(flips)
    if not shown:
        return ""
    rows = (
        [
            td(e["model"]),
            td(e["unchanged"], True),
            td(e["flipped"], True),
            td(_rate(e), True),
            td("greedy" if e["greedy"] else "sampled"),
            td(", ".join(e["examples"])),
        ]
        for e in shown
    )
    return (
        "<h3>Answer flips on unchanged items</h3>"
        '<p class="small">The same request to the same weights in both runs, neither answer from the cache: '
        "the share whose text differs. Greedy answers that flip are serving noise (batching), not the model; "
        "<code>deterministic: true</code> on a managed llama.cpp backend removes it.</p>"
        + table(["model", "unchanged", "flipped", "flip rate", "decoding", "e.g. items"], rows, "compare-flips")
    )
