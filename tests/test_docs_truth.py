"""The documentation stays true: its commands run and its pool files load.

- Every ``python -m MODULE --flag …`` in README.md, docs/*.md, bench/README.md and CHANGELOG.md (in a
  code block or an inline code span) names a module of this project that exists, and only flags its
  parser accepts — read from the module's ``build_parser()`` when it has one, else from
  ``python -m MODULE --help``. Modules of other projects (pytest, venv, llama_cpp.server) are not
  checked.
- Every ``yaml`` block that looks like a pool file (its top-level keys are pool-file blocks, with
  ``backends:`` or ``models:`` among them) validates with the product's pool-file validator. A
  fragment is read inside the shipped ``model_pool.yaml``: without ``models:`` it gets the shipped
  models and backends (its own backends added, its judge in place of the shipped one); with
  ``models:`` but no ``backends:``, the shipped backends.
- The option lists of ``--resume`` and ``--rescore`` in docs/running.md name exactly the options of
  ``pool.run_spec.PLAN_OPTIONS`` and ``RESCORE_OPTIONS``, the tuples the CLI enforces.
- Every relative link of those pages reaches a file of the repository, and its ``#anchor`` a heading
  of that page (GitHub's rule: lower case, punctuation dropped, spaces as hyphens).

A failure lists every wrong reference at once, with its file and line.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import importlib.util
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from pool.config import PoolConfigError, parse_pool
from pool.run_spec import PLAN_OPTIONS, RESCORE_OPTIONS

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "bench" / "README.md", REPO / "CHANGELOG.md"]
OUR_PACKAGES = {"pool", "routing", "eval", "judge", "runners", "bench"}
POOL_BLOCKS = {
    "backends",
    "defaults",
    "models",
    "judge",
    "judges",
    "panel_rule",
    "criteria_grading",
    "execution",
    "reference_agent",
}

FENCE = re.compile(r"^```([\w-]*)\s*$")
COMMAND = re.compile(r"python3? -m ([A-Za-z_][\w.]*)(.*)")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
COMMAND_END = re.compile(r"\s#|[|;>`]|&&")  # a shell comment, a pipe, a redirection, the end of a code span


@dataclass(frozen=True)
class Command:
    file: Path
    line: int
    module: str
    flags: tuple[str, ...]

    def where(self) -> str:
        return f"{self.file.relative_to(REPO)}:{self.line}"


@dataclass(frozen=True)
class Block:
    file: Path
    line: int
    language: str
    text: str


def blocks_and_prose(path: Path) -> tuple[list[Block], list[tuple[int, str]]]:
    """The fenced blocks of a markdown file, and its other lines (numbered from 1)."""
    blocks: list[Block] = []
    prose: list[tuple[int, str]] = []
    fence: tuple[int, str] | None = None
    body: list[str] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        match = FENCE.match(line.strip())
        if fence is None and match:
            fence, body = (number, match.group(1)), []
        elif fence is not None and line.strip() == "```":
            blocks.append(Block(path, fence[0] + 1, fence[1], "\n".join(body)))
            fence = None
        elif fence is not None:
            body.append(line)
        else:
            prose.append((number, line))
    return blocks, prose


def _command(path: Path, line: int, text: str) -> Command | None:
    match = COMMAND.search(text)
    if match is None:
        return None
    rest = COMMAND_END.split(match.group(2), maxsplit=1)[0]
    return Command(path, line, match.group(1), tuple(FLAG.findall(rest)))


def commands() -> Iterator[Command]:
    """Every ``python -m`` command of the docs: one per code-block line (continuations joined) and per inline span."""
    for path in DOCS:
        blocks, prose = blocks_and_prose(path)
        for block in blocks:
            lines = block.text.splitlines()
            joined, start = "", 0
            for offset, line in enumerate(lines):
                if not joined:
                    start = offset
                joined += line.rstrip("\\") + " "
                if line.endswith("\\"):
                    continue
                for piece in re.split(r"(?=python3? -m )", joined):  # several commands on one cron line
                    if (found := _command(path, block.line + start, piece)) is not None:
                        yield found
                joined = ""
        text = "\n".join(line for _, line in prose)
        line_of = [number for number, line in prose for _ in range(len(line) + 1)]
        for span in re.finditer(r"`([^`]+)`", text):
            inline = span.group(1).replace("\n", " ") + "`"  # a code span may run over a line break
            if (found := _command(path, line_of[min(span.start(), len(line_of) - 1)], inline)) is not None:
                yield found


def ours(module: str) -> bool:
    return module.split(".")[0] in OUR_PACKAGES


@functools.cache
def accepted_flags(module: str) -> frozenset[str] | None:
    """The option strings ``python -m module`` accepts; None when the module does not exist."""
    try:
        spec = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return None
    if spec is None:
        return None
    build = None
    for name in (module, f"{module}.__main__") if spec.submodule_search_locations else (module,):
        try:
            build = getattr(importlib.import_module(name), "build_parser", None)
        except Exception:  # noqa: BLE001 - a module that cannot be imported here is asked in a subprocess
            build = None
        if callable(build):
            break
    parser = build() if callable(build) else None
    if isinstance(parser, argparse.ArgumentParser):
        return frozenset(parser_flags(parser))
    return frozenset(help_flags(module)) | {"--help"}


def documented_parser(module: str) -> argparse.ArgumentParser | None:
    """The module's own ``build_parser()`` (or its ``__main__``'s), None when it has none."""
    spec = importlib.util.find_spec(module)
    for name in (module, f"{module}.__main__") if spec and spec.submodule_search_locations else (module,):
        build = getattr(importlib.import_module(name), "build_parser", None)
        if callable(build):
            parser = build()
            return parser if isinstance(parser, argparse.ArgumentParser) else None
    return None


def help_flags(module: str, *command: str) -> Iterator[str]:
    """The flags ``python -m module [command] --help`` shows, and its sub-commands' (``{a,b}`` in its usage)."""
    shown = subprocess.run(
        [sys.executable, "-m", module, *command, "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    ).stdout
    yield from FLAG.findall(shown)
    usage = shown.split("\n\n", 1)[0]
    for choices in re.findall(r"\{([\w,-]+)\}", usage) if not command else ():
        for sub in choices.split(","):
            yield from help_flags(module, sub)


def parser_flags(parser: argparse.ArgumentParser) -> Iterator[str]:
    """Every option string of a parser and of its sub-commands' parsers."""
    for action in parser._actions:
        yield from action.option_strings
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from parser_flags(sub)


def test_the_docs_hold_commands_to_check() -> None:
    found = [c for c in commands() if ours(c.module)]
    assert len(found) > 50 and any(c.module == "pool.run" and "--orchestration" in c.flags for c in found)


def test_every_documented_command_names_a_module_and_flags_that_exist() -> None:
    wrong: list[str] = []
    for command in commands():
        if not ours(command.module):
            continue
        flags = accepted_flags(command.module)
        if flags is None:
            wrong.append(f"{command.where()}: python -m {command.module}: no such module")
            continue
        unknown = [flag for flag in command.flags if flag not in flags]
        if unknown:
            wrong.append(f"{command.where()}: python -m {command.module} does not accept {', '.join(unknown)}")
    assert not wrong, "documented commands that do not run as written:\n" + "\n".join(sorted(set(wrong)))


def test_every_documented_command_formats_its_help() -> None:
    """``--help`` of every documented ``python -m`` command with a parser prints (a stray ``%`` in a help
    text, say, makes argparse fail only when the help is shown)."""
    broken: list[str] = []
    modules = sorted({c.module for c in commands() if ours(c.module) and accepted_flags(c.module) is not None})
    for module in modules:
        parser = documented_parser(module)
        try:
            if parser is not None:
                parser.format_help()
        except (ValueError, TypeError, KeyError) as exc:
            broken.append(f"python -m {module} --help: {type(exc).__name__}: {exc}")
    assert len(modules) > 20 and not broken, "\n".join(broken)


def pool_examples() -> Iterator[tuple[Block, dict[str, Any]]]:
    for path in DOCS:
        for block in blocks_and_prose(path)[0]:
            if block.language not in ("yaml", "yml"):
                continue
            try:
                data = yaml.safe_load(block.text)
            except yaml.YAMLError:
                continue
            if isinstance(data, dict) and set(data) <= POOL_BLOCKS and {"backends", "models"} & set(data):
                yield block, data


def completed(example: dict[str, Any]) -> dict[str, Any]:
    """A pool-file fragment inside the shipped pool (see the module docstring)."""
    shipped = yaml.safe_load((REPO / "model_pool.yaml").read_text(encoding="utf-8"))
    if "models" in example:
        return {"backends": shipped["backends"], **example} if "backends" not in example else dict(example)
    pool = {**shipped, **{k: v for k, v in example.items() if k != "backends"}}
    pool["backends"] = {**shipped["backends"], **(example.get("backends") or {})}
    if "judges" in example:
        pool.pop("judge", None)
    return pool


def test_the_docs_hold_pool_examples() -> None:
    files = {block.file.name for block, _ in pool_examples()}
    assert {"README.md", "pool-file.md"} <= files


def test_every_pool_file_example_validates() -> None:
    wrong: list[str] = []
    for block, example in pool_examples():
        try:
            parse_pool(
                yaml.safe_dump(completed(example), allow_unicode=True, sort_keys=False),
                f"{block.file.relative_to(REPO)}:{block.line}",
            )
        except PoolConfigError as exc:
            wrong.append(f"{block.file.relative_to(REPO)}:{block.line}: {exc}")
    assert not wrong, "pool-file examples the validator refuses:\n" + "\n".join(wrong)


def _table_row(option: str) -> str:
    text = (REPO / "docs" / "running.md").read_text(encoding="utf-8")
    rows = [line for line in text.splitlines() if line.startswith(f"| `{option}")]
    assert len(rows) == 1, f"docs/running.md: expected one options-table row for {option}"
    return rows[0]


def _flags(names: tuple[str, ...]) -> set[str]:
    return {"--" + name.replace("_", "-") for name in names}


def test_resume_and_rescore_option_lists_are_the_cli_tuples() -> None:
    resume_row = _table_row("--resume DIR")
    listed = set(FLAG.findall(resume_row.split("Every option that shapes results", 1)[1].split(")", 1)[0]))
    assert listed == _flags(PLAN_OPTIONS), (
        f"--resume row: missing {_flags(PLAN_OPTIONS) - listed}, extra {listed - _flags(PLAN_OPTIONS)}"
    )
    rescore_row = _table_row("--rescore RUN_DIR")
    listed = set(FLAG.findall(rescore_row.split("without asking the models", 1)[1]))
    assert listed == _flags(RESCORE_OPTIONS), (
        f"--rescore row: missing {_flags(RESCORE_OPTIONS) - listed}, extra {listed - _flags(RESCORE_OPTIONS)}"
    )


def test_the_cli_help_and_the_refusal_name_the_same_options() -> None:
    from pool.items_source import DataError
    from pool.run import build_parser
    from pool.run_spec import RunSpec, rescore_options

    helps = {a.dest: " ".join((a.help or "").split()) for a in build_parser()._actions}
    assert _flags(RESCORE_OPTIONS) <= set(FLAG.findall(helps["rescore"]))
    assert _flags(PLAN_OPTIONS) <= set(FLAG.findall(helps["resume"]))
    try:
        rescore_options(RunSpec(limit=3), {})
    except DataError as refusal:
        assert str(refusal).startswith("--limit with --rescore") and _flags(RESCORE_OPTIONS) <= set(
            FLAG.findall(str(refusal))
        )
    else:
        raise AssertionError("a rescore with --limit was not refused")


def heading_anchors(path: Path) -> set[str]:
    """The anchors GitHub gives a markdown page's headings (a repeated one gets ``-1``, ``-2``, …)."""
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in blocks_and_prose(path)[1]:
        heading = re.match(r"#{1,6}\s+(.*)", line)
        if heading is None:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_every_relative_link_reaches_its_file_and_heading() -> None:
    wrong: list[str] = []
    for doc in DOCS:
        for number, line in blocks_and_prose(doc)[1]:
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"[a-z]+:", target):
                    continue
                path, _, anchor = target.partition("#")
                linked = (doc.parent / path).resolve() if path else doc
                where = f"{doc.relative_to(REPO)}:{number}: {target}"
                if not linked.exists():
                    wrong.append(f"{where}: no such file")
                elif anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked):
                    wrong.append(f"{where}: no heading with that anchor in {linked.relative_to(REPO)}")
    assert not wrong, "links that lead nowhere:\n" + "\n".join(wrong)
