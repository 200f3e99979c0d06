"""Specialty coverage before any model answers: ``python -m eval.inventory [PATH ...] [--min-n 5] [--md]``.

The med-agent-verifier README keeps a judge-free, zero-cost coverage report of its criteria gold
(内科 ▸ system ▸ domain, 精神科 ▸ ...). This is that report for any suite: the scorable items of the
specialty family (criteria gold), counted by broad area (:mod:`eval.items.broad_areas`) ▸ system ▸
domain, and the *thin* buckets — fewer than ``min_n`` items. ``routing.build`` routes a bucket only
to a model with ``min_n`` scored items there, so a thin bucket can never be routed on its own,
whatever the models do: its questions fall back to the system, the family or the default model.
Knowing that before a night's run is what the inventory is for.

Counts in the tree are per broad area. The thin list names leaderboard buckets
(``specialty/domain/<system:topic>``, ``specialty/system/<system>``, ``specialty/broad_area/<area>``),
which count a system or domain asked from two areas once, whole.

Text by default, Markdown with ``--md``. Exit status: 0 printed; 1 no scorable specialty item in the
given suites; 2 a broken file or a missing path (path:line and the field on stderr).
"""

from __future__ import annotations

import argparse
import sys
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from eval.gold_types import FAMILY_OF_GOLD_TYPE
from eval.items import Item
from eval.items.broad_areas import area_order, broad_area_of
from eval.loaders import ItemFormatError, load_demo_suite, load_items

NO_DOMAIN = "(none)"  # as the leaderboard names the domain of an item without one
DEFAULT_MIN_N = 5  # routing.build's default --min-n
LEVELS = ("broad_area", "system", "domain")  # widest first


@dataclass(frozen=True)
class Node:
    """One line of the tree: a broad area, a system within it, or a domain within that."""

    level: str
    name: str
    items: int
    thin: bool  # its leaderboard bucket has fewer than min_n items
    children: tuple[Node, ...] = ()


@dataclass(frozen=True)
class Inventory:
    sources: tuple[str, ...]
    min_n: int
    items: int  # scorable specialty items counted
    left_out: dict[str, int]  # reason -> items not counted
    tree: tuple[Node, ...]
    buckets: dict[str, int]  # leaderboard bucket id -> items
    thin: tuple[tuple[str, int], ...]  # (bucket id, items), widest level first, then fewest items

    def count(self, level: str) -> int:
        return sum(1 for bucket in self.buckets if bucket.split("/")[1] == level)


def bucket_id(level: str, name: str) -> str:
    return f"specialty/{level}/{name}"


def place(item: Item) -> tuple[str, str, str]:
    """(broad area, system, domain) of an item, named as the leaderboard names them."""
    domain = item.domain or NO_DOMAIN
    return broad_area_of(item), domain.split(":", 1)[0], domain


def take_inventory(items: Iterable[Item], min_n: int = DEFAULT_MIN_N, sources: Sequence[str] = ()) -> Inventory:
    """The inventory of ``items``: scorable specialty items counted; the others tallied by reason."""
    places: list[tuple[str, str, str]] = []
    left_out: Counter[str] = Counter()
    for item in items:
        if FAMILY_OF_GOLD_TYPE[item.gold_type] != "specialty":
            left_out["not in the specialty family (no criteria gold)"] += 1
        elif not item.scorable:
            left_out["not scorable"] += 1
        else:
            places.append(place(item))
    buckets: Counter[str] = Counter()
    for area, system, domain in places:
        buckets.update((bucket_id("broad_area", area), bucket_id("system", system), bucket_id("domain", domain)))
    per_place = Counter(places)

    def thin(level: str, name: str) -> bool:
        return buckets[bucket_id(level, name)] < min_n

    tree = []
    for area in sorted({a for a, _, _ in places}, key=area_order):
        systems = []
        for system in sorted({s for a, s, _ in places if a == area}):
            domains = tuple(
                Node("domain", d, n, thin("domain", d))
                for (a, s, d), n in sorted(per_place.items())
                if a == area and s == system
            )
            systems.append(Node("system", system, sum(d.items for d in domains), thin("system", system), domains))
        tree.append(Node("broad_area", area, sum(s.items for s in systems), thin("broad_area", area), tuple(systems)))
    thin_buckets = sorted(
        ((b, n) for b, n in buckets.items() if n < min_n),
        key=lambda bn: (LEVELS.index(bn[0].split("/")[1]), bn[1], bn[0]),
    )
    return Inventory(
        tuple(sources),
        min_n,
        len(places),
        dict(sorted(left_out.items())),
        tuple(tree),
        dict(sorted(buckets.items())),
        tuple(thin_buckets),
    )


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _summary(inv: Inventory) -> str:
    return (
        f"{_plural(inv.items, 'scorable specialty item')} in {_plural(inv.count('broad_area'), 'broad area')}, "
        f"{_plural(inv.count('system'), 'system')}, {_plural(inv.count('domain'), 'domain')} "
        f"({', '.join(inv.sources) or 'the built-in demo suite'})"
    )


def _width(text: str) -> int:
    """Terminal columns: a CJK character (内科) takes two, so the counts still line up."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _width(text))


def _left_out(inv: Inventory) -> str:
    return "; ".join(f"{n} {reason}" for reason, n in inv.left_out.items())


def _thin_note(inv: Inventory) -> str:
    return (
        f"{len(inv.thin)} of {len(inv.buckets)} buckets have fewer than min_n = {inv.min_n} items: no model can be "
        "routed there on its own (its questions go to the system, the family or the default model)"
    )


def render_text(inv: Inventory) -> str:
    """The tree indented two spaces a level, counts right-aligned, thin lines marked; then the thin buckets."""
    width = max([_width(n.name) + 2 * depth for n, depth in _walk(inv.tree)] + [10])
    lines = [f"Specialty inventory (judge-free): {_summary(inv)}"]
    if inv.left_out:
        lines.append(f"Not counted: {_left_out(inv)}")
    lines.append("")
    for node, depth in _walk(inv.tree):
        mark = "  thin" if node.thin else ""
        lines.append(f"{'  ' * depth}{_pad(node.name, width - 2 * depth)}  {node.items:>5}{mark}")
    lines += [
        "",
        f"Thin buckets: {_thin_note(inv)}"
        if inv.thin
        else f"No thin bucket: every bucket has at least {inv.min_n} items.",
    ]
    lines += [f"  {_pad(bucket, max(_width(b) for b, _ in inv.thin))}  {n:>5}" for bucket, n in inv.thin]
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """A Markdown table cell: pipes escaped, so a name cannot open a column."""
    return text.replace("\\", "\\\\").replace("|", "\\|")


def render_markdown(inv: Inventory) -> str:
    """One table (broad area, system, domain, items; thin counts in bold) and the thin buckets' table."""
    lines = ["# Specialty inventory", "", f"Judge-free: {_cell(_summary(inv))}."]
    if inv.left_out:
        lines.append(f"Not counted: {_cell(_left_out(inv))}.")
    lines += ["", "| broad area | system | domain | items |", "|---|---|---|---:|"]
    for node, depth in _walk(inv.tree):
        columns = ["", "", ""]
        columns[depth] = _cell(node.name)
        count = f"**{node.items}** (thin)" if node.thin else str(node.items)
        lines.append(f"| {' | '.join(columns)} | {count} |")
    lines += ["", "## Thin buckets", ""]
    if not inv.thin:
        lines.append(f"None: every bucket has at least {inv.min_n} items.")
    else:
        lines += [f"{_cell(_thin_note(inv))}.", "", "| bucket | items |", "|---|---:|"]
        lines += [f"| {_cell(bucket)} | {n} |" for bucket, n in inv.thin]
    return "\n".join(lines) + "\n"


def _walk(nodes: Sequence[Node], depth: int = 0) -> Iterable[tuple[Node, int]]:
    for node in nodes:
        yield node, depth
        yield from _walk(node.children, depth + 1)


def _min_n(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {value}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m eval.inventory",
        description="Judge-free specialty inventory: scorable criteria items by broad area (内科, 精神科, ...) "
        "> system > domain, and the buckets too thin (fewer than --min-n items) to be routed on their own. "
        "Exit 1 when the suites hold no scorable specialty item, 2 on a broken file or a missing path.",
    )
    parser.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="suite files or folders (default: the built-in demo suite)"
    )
    parser.add_argument(
        "--data",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        help="a suite file or folder, as pool.run takes it (repeatable; adds to PATH)",
    )
    parser.add_argument(
        "--min-n",
        type=_min_n,
        default=DEFAULT_MIN_N,
        help=f"items a bucket needs not to be thin: routing.build's --min-n (default {DEFAULT_MIN_N})",
    )
    parser.add_argument("--md", action="store_true", help="print Markdown instead of text")
    args = parser.parse_args(argv)
    paths = [*args.paths, *args.data]
    try:
        result = load_items(paths) if paths else load_demo_suite()
    except ItemFormatError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    inv = take_inventory(result.items, args.min_n, [str(p) for p in paths])
    if not inv.items:
        print(
            f"error: no scorable specialty (criteria gold) item in {', '.join(map(str, paths)) or 'the demo suite'}"
            f"{f' ({_left_out(inv)})' if inv.left_out else ''}; "
            "point it at a criteria suite, e.g. ../shared/data/book-gold",
            file=sys.stderr,
        )
        return 1
    print(render_markdown(inv) if args.md else render_text(inv), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
