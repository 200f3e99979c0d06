"""The directions the architecture promises, read from every import statement (function-level ones
too): ``eval`` and ``runners`` import nothing of ours; ``judge`` only ``eval``; ``routing`` never
``pool`` or ``runners``; no package imports ``bench`` or ``tests``, and ``bench`` never imports
``tests``. No import circles anywhere, and no package folder holds more than a dozen files at its top
(``python -m tests.import_graph`` prints the numbers)."""

from __future__ import annotations

from tests.import_graph import PACKAGES, REPO, TOP_FILES_LIMIT, circles, folder_tops, graph, imports_of

ALLOWED = {
    "eval": {"eval"},
    "runners": {"runners"},
    "judge": {"judge", "eval"},
    "routing": {"routing", "eval", "judge"},
    "pool": {"pool", "eval", "runners", "judge", "routing"},
}


def test_every_import_follows_the_promised_directions() -> None:
    broken = sorted(
        f"{module} imports {target}"
        for module, targets in graph().items()
        for target in targets
        if target.split(".")[0] not in ALLOWED[module.split(".")[0]]
    )
    assert not broken, "imports against the architecture:\n" + "\n".join(broken)


def test_there_are_no_import_circles() -> None:
    found = circles(graph(keep_foreign=()))
    assert not found, "import circles:\n" + "\n".join(" <-> ".join(group) for group in found)


def test_no_package_folder_is_a_flat_hall() -> None:
    crowded = {folder: count for folder, count in folder_tops(PACKAGES) if count > TOP_FILES_LIMIT}
    assert not crowded, f"package folders with more than {TOP_FILES_LIMIT} .py files at their top: {crowded}"


def test_bench_never_imports_tests() -> None:
    leaks = sorted(
        f"{path.relative_to(REPO)} imports {name}"
        for path in sorted((REPO / "bench").rglob("*.py"))
        for name in imports_of(path)
        if name.split(".")[0] == "tests"
    )
    assert not leaks, "bench must stand alone (move what it needs into the product or bench/):\n" + "\n".join(leaks)
