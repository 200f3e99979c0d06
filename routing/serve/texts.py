"""The text a router classifies: one function for the requests it serves and the items it learns from.

A request and a run's item must read alike, or the classifier learns from one distribution and is
asked about another: :func:`request_text` joins the contents of the chat messages (string contents,
and the text parts of a list content) in order, one per line, and keeps the first
:data:`MAX_CHARS` characters (a question's subject sits at its start; the cap bounds the work per
request). A run's items are read back exactly as its models received them: the ``request_json``
that ``run.sqlite`` keeps for every answer (messages, or the raw prompt of a completion-mode model).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

MAX_CHARS = 1000
RUN_DB = "run.sqlite"  # the run store's file in a run folder
ANSWER_STAGE = "answer"  # the stage of a candidate's answer in the run store


def request_text(messages: Any, prompt: Any = None) -> str:
    """The classified text of a chat request (``messages``), or of a completion ``prompt`` when there are none."""
    parts: list[str] = []
    if isinstance(messages, Sequence) and not isinstance(messages, (str, bytes)):
        for message in messages:
            content = message.get("content") if isinstance(message, Mapping) else None
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    if not parts and isinstance(prompt, str):
        parts.append(prompt)
    return "\n".join(parts)[:MAX_CHARS]


class TextsError(ValueError):
    """A run folder whose item texts cannot be read; the message names the file."""


def item_texts(run_dir: Path | str) -> dict[str, str]:
    """``item_id -> request_text`` of every answered item of the run in ``run_dir`` (read-only).

    A chat request is preferred over a completion prompt for the same item (the router serves chat).
    """
    path = Path(run_dir) / RUN_DB
    if not path.is_file():
        raise TextsError(
            f"{path}: not found; the question texts come from the run store of a run written by "
            "pool.run (pass its folder)"
        )
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10) as conn:
            rows = conn.execute(
                "SELECT item_id, request_json FROM results WHERE stage = ? ORDER BY model", (ANSWER_STAGE,)
            ).fetchall()
    except sqlite3.Error as exc:
        raise TextsError(f"{path}: cannot read the run store's results ({exc})") from None
    texts: dict[str, str] = {}
    for item_id, raw in rows:
        try:
            request = json.loads(raw)
        except (TypeError, ValueError):
            continue
        if not isinstance(request, Mapping):
            continue
        text = request_text(request.get("messages"), request.get("prompt"))
        if text and (item_id not in texts or request.get("messages")):
            texts[item_id] = text
    return texts
