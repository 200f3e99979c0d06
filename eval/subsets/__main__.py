"""``python -m eval.subsets``: freeze the mini / medium / large tiers of a suite into YAML files.

    python -m eval.subsets [--data PATH...] [--out DIR] [--no-cover]
    python -m eval.subsets --agreement RUN_DIR [--data PATH...]

The first form loads the suites (the built-in demo suite when no --data is given, as pool.run does),
ranks their scorable non-orchestration items and writes ``DIR/{mini,medium,large}.yaml`` (default
``./subsets``, where ``pool.run --subset NAME`` looks). The second prints, as JSON, Spearman's ρ
between the heuristic and the run's observed composite difficulty. Exit 0 on success, 2 on bad
input (a missing path, a broken item file or run folder), 1 when the files cannot be written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from eval.items import Item
from eval.loaders import DuplicateItemError, ItemFormatError, LoadResult, load_demo_suite, load_items
from eval.subsets.agreement import RunReadError, agreement, observed_difficulty
from eval.subsets.files import DEFAULT_DIR, data_fingerprint, refresh_command, render_tier, tier_path
from eval.subsets.heuristic import difficulties
from eval.subsets.order import TIER_SIZES, subset_order, tier_candidates


def _load(paths: Sequence[str]) -> LoadResult:
    if not paths:
        return load_demo_suite()
    missing = [path for path in paths if not Path(path).exists()]
    if missing:
        raise FileNotFoundError(f"--data: no such file or folder: {', '.join(missing)}")
    return load_items([Path(path) for path in paths])


def freeze(loaded: LoadResult, data: Sequence[str], out: Path, cover: bool = True) -> tuple[list[Path], list[Item]]:
    """Write the three tier files for ``loaded`` into ``out``; the paths and the whole ranking."""
    candidates = tier_candidates(loaded.items)
    if not candidates:
        raise ValueError("no scorable item outside the orchestration track to rank")
    difficulty = difficulties(candidates)
    order = subset_order(candidates, cover=cover, difficulty=difficulty)
    fingerprint = data_fingerprint(candidates)
    command = refresh_command(data, str(out)) + ("" if cover else " --no-cover")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, size in TIER_SIZES.items():
        tier = order if size is None else order[:size]
        text = render_tier(name, tier, difficulty, fingerprint=fingerprint, data=data, command=command,
                           ranked=len(order), cover=cover)
        path = tier_path(out, name)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written, order


def _summary(written: list[Path], order: list[Item]) -> str:
    lines = []
    for path, size in zip(written, TIER_SIZES.values(), strict=True):
        tier = order if size is None else order[:size]
        tasks = len({(i.track, i.task) for i in tier})
        domains = len({i.domain for i in tier if i.domain})
        tracks = ", ".join(f"{track} {n}" for track, n in sorted(Counter(i.track for i in tier).items()))
        lines.append(f"{path}: {len(tier)} items ({tracks}); {tasks} tasks, {domains} domains")
    all_tasks = len({(i.track, i.task) for i in order})
    lines.append(f"ranked {len(order)} items in {all_tasks} tasks; orchestration items are not ranked "
                 "(they run whole with --orchestration)")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.subsets",
        description="Freeze the nested mini (30) / medium (100) / large (all) tiers of a suite into "
        "DIR/{mini,medium,large}.yaml, ranked by a model-free difficulty heuristic with a round robin over "
        "(track, task, domain) buckets. pool.run --subset NAME reads ./subsets/NAME.yaml. Exit 0 on success, "
        "2 on bad input, 1 when writing fails.",
    )
    parser.add_argument("--data", nargs="+", default=[], metavar="PATH",
                        help="item files or folders (default: the built-in demo suite)")
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR, metavar="DIR",
                        help=f"folder for the tier files (default: ./{DEFAULT_DIR})")
    parser.add_argument("--no-cover", action="store_true",
                        help="do not put the hardest item of every reference task first (hard coverage is on by default)")
    parser.add_argument("--agreement", type=Path, metavar="RUN_DIR",
                        help="instead of writing files, print Spearman's rho between the heuristic and the observed "
                        "composite difficulty in RUN_DIR/scores.jsonl (give the run's --data)")
    args = parser.parse_args(argv)
    try:
        loaded = _load(args.data)
        if args.agreement is not None:
            report = agreement(tier_candidates(loaded.items), observed_difficulty(args.agreement))
            print(json.dumps({"run": str(args.agreement), **report}, ensure_ascii=False, indent=2))
            return 0
        written, order = freeze(loaded, args.data, args.out, cover=not args.no_cover)
    except (FileNotFoundError, ItemFormatError, DuplicateItemError, RunReadError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot write the tier files into {args.out}: {exc}", file=sys.stderr)
        return 1
    print(_summary(written, order))
    return 0


if __name__ == "__main__":
    sys.exit(main())
