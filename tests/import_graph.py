"""The product's import graph, read from every import statement (function-level ones too), and the
numbers a reviewer asks of a layout: ``.py`` files at the top of each package folder, import
circles, the longest chain of imports.

    python -m tests.import_graph      # print those numbers for this checkout
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("eval", "runners", "judge", "pool", "routing")
TOP_FILES_LIMIT = 12


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports, by absolute dotted name (relative imports resolved)."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.add(name)
            found.update(f"{name}.{alias.name}" for alias in node.names)
    return found


def source_files(packages: tuple[str, ...] = PACKAGES) -> list[Path]:
    return sorted(p for package in packages for p in (REPO / package).rglob("*.py"))


def graph(
    packages: tuple[str, ...] = PACKAGES, keep_foreign: tuple[str, ...] = ("bench", "tests")
) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (names of ``keep_foreign`` packages kept as they are)."""
    files = source_files(packages)
    names = {module_name(p) for p in files}
    return {
        module_name(p): {m for m in imports_of(p) if m in names or m.split(".")[0] in keep_foreign} - {module_name(p)}
        for p in files
    }


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of two or more modules (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in edges.get(node, ()):
            if target not in edges:
                continue
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def longest_chain(edges: dict[str, set[str]]) -> list[str]:
    """The longest path of imports, a circle counted as one step (its first member named)."""
    groups = {member: tuple(group) for group in circles(edges) for member in group}

    def rep(module: str) -> str:
        return groups.get(module, (module,))[0]

    condensed: dict[str, set[str]] = {}
    for source, targets in edges.items():
        condensed.setdefault(rep(source), set()).update(rep(t) for t in targets if t in edges and rep(t) != rep(source))

    @functools.cache
    def chain_from(module: str) -> tuple[str, ...]:
        tails = [chain_from(t) for t in sorted(condensed.get(module, ()))]
        return (module, *max(tails, key=len, default=()))

    return list(max((chain_from(m) for m in sorted(condensed)), key=len, default=()))


def folder_tops(packages: tuple[str, ...] = PACKAGES) -> Iterator[tuple[str, int]]:
    """Each package folder and the number of ``.py`` files at its top."""
    folders = sorted({p.parent for p in source_files(packages)})
    for folder in folders:
        yield folder.relative_to(REPO).as_posix(), len(list(folder.glob("*.py")))


def main() -> None:
    edges = graph(keep_foreign=())
    tops = dict(folder_tops())
    print(f"files at the top of each package folder (limit {TOP_FILES_LIMIT}):")
    for folder, count in tops.items():
        print(f"  {count:3d}  {folder}{'  <- over' if count > TOP_FILES_LIMIT else ''}")
    found = circles(edges)
    print(f"modules: {len(edges)}; import circles: {len(found)}")
    for group in found:
        print("  " + " <-> ".join(group))
    chain = longest_chain(edges)
    print(f"longest chain: {len(chain)} modules")
    print("  " + " -> ".join(chain))


if __name__ == "__main__":
    main()
