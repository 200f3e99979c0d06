"""Loaders: every suite format in, one immutable ``Item`` model out.

One module per format in ``formats/`` (``reference``, ``criteria``, ``probes``, ``tool_decision``,
``tcm_sd``, ``chip`` (CHIP TCM cases), ``linglan`` (LingLan-style task_type/gold_answer items),
``calibration`` (recognised and skipped), ``medpool_jsonl`` (the project's own format)); here,
``base`` (the ``Loader`` declaration, ``LoadResult``, ``ItemFormatError`` naming path:line:field,
the JSON readers), ``yaml_records`` (YAML records with their line numbers) and ``registry``, which
picks a loader by suite manifest or by the file's shape. Entry points::

    load_items([Path("../shared/data")]) -> LoadResult(items, skipped)
    load_demo_suite() -> LoadResult
"""

from eval.loaders.base import DuplicateItemError, ItemFormatError, Loader, LoadResult, Skipped
from eval.loaders.registry import DEMO_DIR, LOADERS, MANIFEST_NAME, choose_loader, load_demo_suite, load_items

__all__ = [
    "DEMO_DIR",
    "LOADERS",
    "MANIFEST_NAME",
    "DuplicateItemError",
    "ItemFormatError",
    "LoadResult",
    "Loader",
    "Skipped",
    "choose_loader",
    "load_demo_suite",
    "load_items",
]
