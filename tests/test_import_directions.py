"""The directions the architecture promises, read from every import statement (function-level ones
too): ``eval`` and ``runners`` import nothing of ours; ``judge`` only ``eval``; ``routing`` never
``pool`` or ``runners``; no package imports ``bench`` or ``tests``. A circle of imports stays inside
one room of ``pool``."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("eval", "runners", "judge", "pool", "routing")
ALLOWED = {
    "eval": {"eval"},
    "runners": {"runners"},
    "judge": {"judge", "eval"},
    "routing": {"routing", "eval", "judge"},
    "pool": {"pool", "eval", "runners", "judge", "routing"},
}
OURS = (*PACKAGES, "bench", "tests")


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, by absolute dotted name (relative imports resolved)."""
    module = _module_name(path)
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


def _graph() -> dict[str, set[str]]:
    files = [p for package in PACKAGES for p in (REPO / package).rglob("*.py")]
    names = {_module_name(p) for p in files}
    return {
        _module_name(p): {m for m in _imports(p) if m in names or m.split(".")[0] in ("bench", "tests")}
        - {_module_name(p)}
        for p in files
    }


def test_every_import_follows_the_promised_directions() -> None:
    broken = sorted(
        f"{module} imports {target}"
        for module, targets in _graph().items()
        for target in targets
        if target.split(".")[0] not in ALLOWED[module.split(".")[0]]
    )
    assert not broken, "imports against the architecture:\n" + "\n".join(broken)


def test_import_circles_in_pool_stay_inside_one_room() -> None:
    graph = _graph()

    def room(module: str) -> str:
        parts = module.split(".")
        return ".".join(parts[:2]) if len(parts) > 2 else "pool (top)"

    crossing = sorted(
        {
            f"{a} <-> {b}"
            for a, targets in graph.items()
            if a.startswith("pool.")
            for b in targets
            if b.startswith("pool.") and a in graph.get(b, set()) and room(a) != room(b)
        }
    )
    assert not crossing, "import circles across rooms:\n" + "\n".join(crossing)


def test_the_top_of_pool_is_a_few_entry_points() -> None:
    top = sorted(p.name for p in (REPO / "pool").glob("*.py"))
    assert len(top) <= 12, top
