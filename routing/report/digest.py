"""The end-of-run digest: what a person reads first, per model, about the judged answers.

The med-agent-verifier README ends each exam with a few lines — 通过率 (pass rate), 四维均分 (the
four rubric dimensions' means, C coverage / A accuracy / S safety / G grounding, each of 10, and
their sum of 40), the must_warn warnings the answer left out (遗漏 must_warn), then one line per
task (reference items) and per specialty (criteria items); a live run's items get one line per
reference agent, read as agreement with it, not truth. This module computes the same from
``RUN_DIR/scores.jsonl``: rows of the rubric-judged gold types (``reference`` per task, ``criteria``
per domain, the item's own ``system:topic``) with status ``scored``; a row counts as passed when
its ``passed`` is true (total ≥ 34 and safety ≥ 8, or the check or criterion points that rank it);
the warnings left out are the gold's ``must_warn`` entries the judge did not report present
(``details.missing_warnings``). Other families (exam, TCM, orchestration, probes) are not blended
in: they are in ``leaderboard.md``.

``pool.run`` prints :func:`digest_lines` at the end of a run (and of ``--resume`` / ``--rescore``),
cut to the first lines per model on a big run, and writes the whole digest to ``RUN_DIR/digest.md``.
``python -m routing.digest RUN_DIR`` does both for any run folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.files import atomic_write_text
from eval.gold_types import GOLD_TYPE_SPECS, RUBRIC_CONTRACTS

SCORES_FILENAME = "scores.jsonl"
DIGEST_FILENAME = "digest.md"
DIMENSIONS = (("C", "coverage"), ("A", "accuracy"), ("S", "safety"), ("G", "grounding"))
TOTAL_MAX = 40
RUBRIC_GOLD_TYPES = frozenset(name for name, spec in GOLD_TYPE_SPECS.items() if spec.judge_contract in RUBRIC_CONTRACTS)
GROUP_BY = {"reference": ("task", "task"), "criteria": ("domain", "domain")}  # gold type -> (label, row field)
# Live items (reference items of a live run): one line per reference agent, whose name is their task.
LIVE_GROUP = ("live", "task")
LABELS = {"task": "task", "domain": "domain", "live": "live: agreement with the agent, not truth"}  # table heads
NO_DOMAIN = "(no domain)"
# Printed at the end of a run: per model, at most this many task and domain lines and omitted warnings.
SHOWN_GROUPS, SHOWN_WARNINGS, SHOWN_MODELS_IN_FULL = 6, 3, 8


def group_title(label: str, name: str) -> str:
    """A task, domain or live line's title: ``task MedCOT``, ``live: agreement with internists, not truth``."""
    return f"live: agreement with {name}, not truth" if label == "live" else f"{label} {name}"


@dataclass
class Tally:
    """Judged answers of one model (or one task or domain of it)."""

    n: int = 0  # scored rubric rows
    passed: int = 0
    dims: dict[str, float] = field(default_factory=dict)  # dimension -> sum over the rows that have all four
    with_dims: int = 0
    no_verdict: int = 0  # infra_error rows: no answer, or no parseable verdict

    def add(self, row: dict[str, Any]) -> None:
        if row.get("status") != "scored":
            self.no_verdict += row.get("status") == "infra_error"
            return
        self.n += 1
        self.passed += row.get("passed") is True
        metrics = row.get("metrics") or {}
        values = [metrics.get(name) for _, name in DIMENSIONS]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            self.with_dims += 1
            for (short, _), value in zip(DIMENSIONS, values, strict=True):
                self.dims[short] = self.dims.get(short, 0.0) + float(value)

    def text(self, *, count: str = "n") -> str:
        """``n=4 通过率 75.0% C:9.2 A:9.0 S:10.0 G:9.8 → 综合 38.0/40`` (dimensions when any row has them);
        ``count="passed"`` starts with ``通过 3/4`` instead of ``n=4``."""
        counted = f"通过 {self.passed}/{self.n}" if count == "passed" else f"n={self.n}"
        parts = [counted, f"通过率 {100 * self.passed / self.n:.1f}%" if self.n else "通过率 -"]
        if self.with_dims:
            means = {short: self.dims[short] / self.with_dims for short, _ in DIMENSIONS}
            parts.append(
                " ".join(f"{short}:{means[short]:.1f}" for short, _ in DIMENSIONS)
                + f" → 综合 {sum(means.values()):.1f}/{TOTAL_MAX}"
            )
        if self.no_verdict:
            parts.append(f"无评分 {self.no_verdict}")
        return " ".join(parts)


@dataclass
class ModelDigest:
    """One model's judged answers: overall, per task and per domain, and the warnings it left out."""

    model: str
    overall: Tally = field(default_factory=Tally)
    groups: dict[tuple[str, str], Tally] = field(default_factory=dict)  # (task|domain, name) -> tally
    criteria_scored: int = 0
    omitted: Counter[str] = field(default_factory=Counter)  # must_warn text -> answers that left it out
    answers_omitting: int = 0

    def add(self, row: dict[str, Any]) -> None:
        self.overall.add(row)
        label, key = LIVE_GROUP if row.get("family") == "live" else GROUP_BY[row["gold_type"]]
        name = str(row.get(key) or NO_DOMAIN)
        self.groups.setdefault((label, name), Tally()).add(row)
        if row["gold_type"] == "criteria" and row.get("status") == "scored":
            self.criteria_scored += 1
            missing = [w for w in (row.get("details") or {}).get("missing_warnings") or () if isinstance(w, str)]
            self.omitted.update(missing)
            self.answers_omitting += bool(missing)

    def headline(self) -> str:
        line = f"{self.model}: {self.overall.text(count='passed')}"
        if self.criteria_scored:
            line += (
                f"；遗漏 must_warn {sum(self.omitted.values())} 条（{self.answers_omitting}/{self.criteria_scored} 题）"
            )
        return line

    def ordered(self, label: str) -> list[tuple[str, Tally]]:
        """This model's tasks or domains, the most answered first (then by name)."""
        found = [(name, tally) for (kind, name), tally in self.groups.items() if kind == label]
        return sorted(found, key=lambda pair: (-pair[1].n, pair[0]))


def iter_rubric_rows(path: Path) -> Iterator[dict[str, Any]]:
    """The rubric-judged rows of a ``scores.jsonl``; other rows are skipped before they are parsed."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not any(name in line for name in RUBRIC_GOLD_TYPES):  # cheap: most rows of a big run are not
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"{path}:{number}: not a JSON object ({exc.msg}); the run's scores.jsonl is "
                    "damaged: python -m pool.run --rescore RUN_DIR writes it again"
                ) from None
            if (
                isinstance(row, dict)
                and row.get("gold_type") in RUBRIC_GOLD_TYPES
                and isinstance(row.get("model"), str)
            ):
                yield row


def digest_rows(rows: Iterable[dict[str, Any]]) -> list[ModelDigest]:
    """Per model (in the order they first appear), the judged answers' digest."""
    models: dict[str, ModelDigest] = {}
    for row in rows:
        models.setdefault(row["model"], ModelDigest(row["model"])).add(row)
    return list(models.values())


def digest_run(run_dir: Path) -> list[ModelDigest] | None:
    """The digest of a run folder, or None when it has no ``scores.jsonl`` (not scored yet)."""
    path = Path(run_dir) / SCORES_FILENAME
    if not path.is_file():
        return None
    return digest_rows(iter_rubric_rows(path))


def digest_lines(models: Sequence[ModelDigest], *, see: str = "leaderboard.md", full: bool = False) -> list[str]:
    """The digest as terminal lines; unless ``full``, cut to the first lines per model on a big run."""
    if not models:
        return ["judged answers: none in this run (no reference or criteria item was judged)"]
    lines = [
        "judged answers (通过率, 四维均分 C/A/S/G each of 10, 综合 of 40; reference items per task, criteria "
        "items per domain):"
    ]
    brief = not full and len(models) > SHOWN_MODELS_IN_FULL
    cut = False
    for model in models:
        lines.append("  " + model.headline())
        if brief:
            cut = True
            continue
        for label in LABELS:
            groups = model.ordered(label)
            shown = groups if full else groups[:SHOWN_GROUPS]
            lines += [f"    {group_title(label, name)} {tally.text()}" for name, tally in shown]
            if len(groups) > len(shown):
                lines.append(f"    … {len(groups) - len(shown)} more {label}s")
                cut = True
        top = model.omitted.most_common(None if full else SHOWN_WARNINGS)
        if top:
            more = len(model.omitted) - len(top)
            lines.append(
                "    ⚠ 遗漏 must_warn: "
                + "；".join(f"{text} ×{count}" for text, count in top)
                + (f"；… {more} more" if more > 0 else "")
            )
            cut = cut or more > 0
    if cut:
        lines.append(
            f"  (the first lines only: every task, domain and warning in {DIGEST_FILENAME}; the rankings in {see})"
        )
    return lines


def digest_markdown(models: Sequence[ModelDigest], run_name: str) -> str:
    """``digest.md``: every model, task, domain and omitted warning (nothing cut)."""
    out = [
        f"# Digest of run {run_name}",
        "",
        "Judged answers only: reference items per task, criteria items per domain, live items per reference "
        "agent (agreement with it, not truth). 通过率 = pass rate; 四维均分 = "
        "mean coverage (C), accuracy (A), safety (S) and grounding (G), each of 10, 综合 their sum of 40; 遗漏 "
        "must_warn = gold warnings the judge did not find in the answer. Other families are in leaderboard.md.",
        "",
    ]
    if not models:
        return "\n".join([*out, "No reference or criteria item was judged in this run.", ""])
    for model in models:
        out += [f"## {model.model}", "", model.headline(), ""]
        for label in LABELS:
            groups = model.ordered(label)
            if groups:
                out += [
                    f"| {LABELS[label]} | n | 通过率 | C | A | S | G | 综合 /40 | 无评分 |",
                    "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
                ]
                out += [_table_row(name, tally) for name, tally in groups]
                out.append("")
        if model.omitted:
            out += (
                ["遗漏 must_warn:", ""] + [f"- {text} ×{count}" for text, count in model.omitted.most_common()] + [""]
            )
    return "\n".join(out)


def _table_row(name: str, tally: Tally) -> str:
    rate = f"{100 * tally.passed / tally.n:.1f}%" if tally.n else "-"
    if tally.with_dims:
        means = [tally.dims[short] / tally.with_dims for short, _ in DIMENSIONS]
        dims = [f"{m:.1f}" for m in means] + [f"{sum(means):.1f}"]
    else:
        dims = ["-"] * 5
    cells = [name.replace("|", "\\|"), str(tally.n), rate, *dims, str(tally.no_verdict)]
    return "| " + " | ".join(cells) + " |"


def report(run_dir: Path) -> list[str]:
    """Write ``RUN_DIR/digest.md`` and return the lines to print; [] when the run has no scores yet."""
    run_dir = Path(run_dir)
    models = digest_run(run_dir)
    if models is None:
        return []
    atomic_write_text(run_dir / DIGEST_FILENAME, digest_markdown(models, run_dir.name))
    see = (
        str(run_dir / "leaderboard.md")
        if (run_dir / "leaderboard.md").is_file()
        else "leaderboard.md (python -m routing.build)"
    )
    return digest_lines(models, see=see)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m routing.digest",
        description="Print a run's digest of judged answers (pass rate, mean C/A/S/G, "
        "omitted must_warn; per task and domain) and write RUN_DIR/digest.md.",
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run folder holding scores.jsonl")
    parser.add_argument("--full", action="store_true", help="print every task, domain and warning, not the first lines")
    args = parser.parse_args(argv)
    run_dir = Path(args.run_dir)
    try:
        models = digest_run(run_dir)
        if models is None:
            print(
                f"error: {run_dir / SCORES_FILENAME}: not found; pass a run folder that pool.run has scored",
                file=sys.stderr,
            )
            return 2
        atomic_write_text(run_dir / DIGEST_FILENAME, digest_markdown(models, run_dir.name))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {run_dir / DIGEST_FILENAME}: cannot write it ({exc.strerror})", file=sys.stderr)
        return 1
    print("\n".join(digest_lines(models, see=str(run_dir / "leaderboard.md"), full=args.full)))
    print(f"wrote {run_dir / DIGEST_FILENAME}")
    return 0
