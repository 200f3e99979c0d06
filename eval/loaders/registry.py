"""Which loader reads which file: a suite manifest when there is one, else the file's shape.

``load_items(paths)`` accepts files and folders (walked recursively, in sorted order, skipping
hidden names). For each file, in this order:

1. The nearest ``medpool-suite.yaml`` in the file's folder or above names the suite and may map
   files to formats::

       suite: my-exam            # suite name used in item ids (default: the file's folder name)
       files:                    # optional; fnmatch patterns on the path relative to this folder,
         "*.jsonl": medpool      # first match wins; a format is a loader name (below) or "skip"
         "drafts/*": skip

2. Otherwise the loaders are asked in registry order whether they recognise the file's shape
   (the parsed document for YAML, the first record for JSON lines).

A data file (.jsonl/.json/.yaml) that no loader recognises is an error; other files (notes,
task descriptions without items) are listed as skipped with the reason. A ``<task>.md`` beside
``<task>.jsonl`` is read by the reference loader, not listed. Ids must be unique across
everything loaded in one call.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.items import Item, Source
from eval.loaders.base import DuplicateItemError, ItemFormatError, Loader, LoadResult, Skipped, first_json_record
from eval.loaders.formats import (
    calibration,
    chip,
    criteria,
    linglan,
    medpool_jsonl,
    probes,
    reference,
    tcm_sd,
    tool_decision,
)
from eval.loaders.yaml_records import read_yaml

MANIFEST_NAME = "medpool-suite.yaml"
SKIP = "skip"
# Recognition order matters only where shapes could overlap; the most specific come first.
LOADERS: dict[str, Loader] = {
    loader.name: loader
    for loader in (
        medpool_jsonl.LOADER,
        reference.LOADER,
        tcm_sd.LOADER,
        chip.LOADER,
        linglan.LOADER,
        criteria.LOADER,
        probes.LOADER,
        tool_decision.LOADER,
        calibration.LOADER,
    )
}
DATA_SUFFIXES = frozenset(suffix for loader in LOADERS.values() for suffix in loader.suffixes)
DEMO_DIR = Path(__file__).resolve().parents[1] / "demo"


@dataclass(frozen=True)
class Manifest:
    folder: Path
    suite: str | None
    files: tuple[tuple[str, str], ...]

    def format_for(self, path: Path) -> str | None:
        relative = path.resolve().relative_to(self.folder.resolve()).as_posix()
        return next((fmt for pattern, fmt in self.files if fnmatch.fnmatchcase(relative, pattern)), None)


def read_manifest(path: Path) -> Manifest:
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ItemFormatError(path, 1, None, "a suite manifest must be a mapping with suite: and/or files:")
    unknown = sorted(set(data) - {"suite", "files", "description"})
    if unknown:
        raise ItemFormatError(path, None, unknown[0], "unknown field", "a manifest has suite:, files: and description:")
    suite = data.get("suite")
    if suite is not None and (not isinstance(suite, str) or not re.fullmatch(r"[^/\s]+", suite)):
        raise ItemFormatError(path, None, "suite", f"must be a name without '/' or spaces, got {suite!r}")
    files = data.get("files") or {}
    if not isinstance(files, dict):
        raise ItemFormatError(path, None, "files", "must be a mapping of pattern: format")
    for pattern, fmt in files.items():
        if fmt != SKIP and fmt not in LOADERS:
            raise ItemFormatError(
                path, None, f"files.{pattern}", f"unknown format {fmt!r}", f"use one of {[*LOADERS, SKIP]}"
            )
    return Manifest(path.parent, suite, tuple((str(p), str(f)) for p, f in files.items()))


class _Context:
    """Manifest lookup, cached per folder for one load_items call."""

    def __init__(self) -> None:
        self._manifests: dict[Path, Manifest | None] = {}

    def manifest(self, folder: Path) -> Manifest | None:
        folder = folder.resolve()
        if folder not in self._manifests:
            candidate = folder / MANIFEST_NAME
            if candidate.is_file():
                self._manifests[folder] = read_manifest(candidate)
            else:
                self._manifests[folder] = self.manifest(folder.parent) if folder.parent != folder else None
        return self._manifests[folder]


def _suite_name(path: Path, manifest: Manifest | None) -> str:
    if manifest is not None and manifest.suite:
        return manifest.suite
    return re.sub(r"[\s/]+", "_", path.resolve().parent.name) or "suite"


def _sample(path: Path) -> Any:
    """What shape recognition looks at: the YAML document, or the first JSON object (of lines or a list)."""
    if path.suffix in (".yaml", ".yml"):
        return read_yaml(path)
    return first_json_record(path)


def choose_loader(path: Path, sample: Any) -> Loader | None:
    """The first registered loader that reads this suffix and recognises the sample."""
    for loader in LOADERS.values():
        if path.suffix in loader.suffixes and loader.recognise(sample):
            return loader
    return None


def _walk(root: Path) -> list[Path]:
    files = [
        path
        for path in root.rglob("*")
        if path.is_file()
        and not any(part.startswith(".") or part == "__pycache__" for part in path.relative_to(root).parts)
    ]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def _not_data_reason(path: Path) -> str:
    if path.suffix == ".md":
        return f"not an item file: a task description or notes, with no {path.stem}.jsonl beside it"
    return f"not an item file: no loader reads '{path.suffix or path.name}' files"


def _load_file(path: Path, context: _Context, named: bool) -> tuple[list[Item], list[Skipped]]:
    """Items and skips of one file; ``named`` means the user gave this file explicitly."""
    if path.name == MANIFEST_NAME:
        return [], []
    manifest = context.manifest(path.parent)
    declared = manifest.format_for(path) if manifest else None
    if declared == SKIP:
        return [], [Skipped(str(path), f"skipped by {MANIFEST_NAME}")]
    if declared is None and path.suffix not in DATA_SUFFIXES:
        if path.suffix == ".md" and path.with_suffix(".jsonl").is_file():
            return [], []  # read by the reference loader with its .jsonl
        if named:
            raise ItemFormatError(path, None, None, _not_data_reason(path), f"name its format in a {MANIFEST_NAME}")
        return [], [Skipped(str(path), _not_data_reason(path))]
    if declared is not None:
        loader = LOADERS[declared]
    else:
        sample = _sample(path)
        if sample is None:
            return [], [Skipped(str(path), "empty file")]
        chosen = choose_loader(path, sample)
        if chosen is None:
            candidates = [
                f"{name} ({loader.description})" for name, loader in LOADERS.items() if path.suffix in loader.suffixes
            ]
            raise ItemFormatError(
                path,
                None,
                None,
                f"no loader recognises this file's shape; {path.suffix} formats: {'; '.join(candidates)}",
                f"Fix the file, or declare its format (or 'skip') in a {MANIFEST_NAME} beside it",
            )
        loader = chosen
    if loader.skip_reason is not None:
        return [], [Skipped(str(path), loader.skip_reason)]
    items = list(loader.load(path, _suite_name(path, manifest)))
    skipped = [Skipped(str(item.source), item.skip_reason or "", item.id) for item in items if not item.scorable]
    return items, skipped


def load_items(paths: Iterable[Path | str]) -> LoadResult:
    """Every item under ``paths`` (files and folders), in argument order then sorted path order.

    Raises ItemFormatError (path:line, field, what to do) on a broken file or a missing path, and
    DuplicateItemError naming both places when an id repeats.
    """
    context = _Context()
    items: list[Item] = []
    skipped: list[Skipped] = []
    seen_files: set[Path] = set()
    first_seen: dict[str, Source] = {}
    for given in paths:
        root = Path(given)
        if root.is_dir():
            files, named = _walk(root), False
        elif root.is_file():
            files, named = [root], True
        else:
            raise ItemFormatError(root, None, None, "no such file or folder", "check the path")
        for path in files:
            if path.resolve() in seen_files:
                continue
            seen_files.add(path.resolve())
            file_items, file_skipped = _load_file(path, context, named)
            for item in file_items:
                if item.id in first_seen:
                    raise DuplicateItemError(
                        item.source.path,
                        item.source.line,
                        "id",
                        f"duplicate id {item.id!r}, first at {first_seen[item.id]}",
                        "ids must be unique: rename one of the two or remove the copy",
                    )
                first_seen[item.id] = item.source
            items.extend(file_items)
            skipped.extend(file_skipped)
    return LoadResult(tuple(items), tuple(skipped))


def load_demo_suite() -> LoadResult:
    """The built-in demo suite shipped in ``eval/demo`` (every gold type; used when no data is given)."""
    return load_items([DEMO_DIR])
