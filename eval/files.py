"""Writing result files so that a reader (or a crash) never sees half of one.

Here because both ``pool`` (results.jsonl, summary.json, scores.jsonl) and ``routing`` (leaderboards,
manifest, report) write such files, and ``eval`` is the leaf package both may import.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half."""
    atomic_write_lines(path, (text,))


def atomic_write_lines(path: Path, lines: Iterable[str]) -> None:
    """:func:`atomic_write_text` of ``"".join(lines)``, written as the lines come: a file of 10⁶
    rows is never one string in memory."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.writelines(lines)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class FolderError(ValueError):
    """A folder the user named cannot be created: bad input, to be reported with what to do."""


def make_folder(path: Path, named_by: str) -> Path:
    """``path`` created with its parents; :class:`FolderError` naming ``named_by`` (the flag that
    gave it, e.g. ``--out``) when it cannot be: no permission, a read-only disk, a file in the way."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise FolderError(
            f"{named_by} {path}: cannot create the folder ({exc.strerror or exc}); pass a folder this user can write to"
        ) from None
    return path


def write_failed(what: str, exc: OSError) -> str:
    """The line a command prints when writing its files fails (e.g. a full disk). Its inputs are
    untouched and its writes atomic, so running it again once the cause is fixed is safe."""
    return f"error: writing {what} failed: {exc}; fix the cause (e.g. free disk space) and run it again"
