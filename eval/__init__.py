"""Evaluation: items, the loaders that read suites into them, metrics and scorers — a leaf package
that imports nothing else of ours. Every metric is importable by name: ``from eval import token_f1``.

Rooms, in the order the data flows:

- ``items/``: the item model (``Item``, ``Source``), the score record every scorer returns
  (``items.scores``), broad clinical areas, and the orchestration items derived from criteria golds;
- ``loaders/``: suite files → items; one module per file format in ``loaders/formats/``, chosen by a
  suite manifest or the file's shape (``loaders.registry``);
- ``generate/``: the probe and tool-decision sets, written deterministically (``python -m eval.generate``);
- ``subsets/``: the frozen mini ⊂ medium ⊂ large tiers (``python -m eval.subsets``);
- ``decision_recognition/``: open labels → single-choice items (``python -m eval.decision_recognition``);
- ``metrics/``: the metric functions (the eval-functions catalogue, LingLan, TCM-SD, CHIP TCM);
- ``scorers/``: judge-free scoring dispatched by gold type through one registry; ``objective/``: the
  SQL and API-call checks some reference items declare;
- ``encoders/``: text encoders as callables, the TF-IDF fallback, cosines and the embedding cache.

At this top: ``gold_types`` (every gold type declared once) with ``gold_checks`` (the check each
names), ``_checks`` (the argument checks metrics and encoders share), ``files`` (atomic result
files, for ``pool`` and ``routing``), and two CLIs over loaded suites: ``datasets``
(``python -m eval.datasets``) and ``inventory`` (``python -m eval.inventory``). ``demo/`` holds
the built-in demo suite.
"""

from eval.encoders import EmbeddingCache, cached_encoder, cosine_matrix, tfidf_char_ngrams
from eval.items import GOLD_TYPES, TRACKS, Item, ItemError, Source
from eval.loaders import DuplicateItemError, ItemFormatError, LoadResult, Skipped, load_demo_suite, load_items
from eval.metrics import *  # noqa: F403 -- every metric by name; eval/metrics/__init__.py lists them
from eval.metrics import CATALOGUE as CATALOGUE
from eval.metrics import __all__ as _metric_names
from eval.scorers import SCORERS, NeedsJudge, UnknownGoldTypeError, register, score_answer

__all__ = [
    *_metric_names,
    # items and loaders: the item model every scorer and the scheduler share
    "GOLD_TYPES",
    "TRACKS",
    "DuplicateItemError",
    "Item",
    "ItemError",
    "ItemFormatError",
    "LoadResult",
    "Skipped",
    "Source",
    "load_demo_suite",
    "load_items",
    # scorers: judge-free scoring dispatched by gold type through one registry
    "SCORERS",
    "NeedsJudge",
    "UnknownGoldTypeError",
    "register",
    "score_answer",
    # text encoders (DTR-F1 by embedding is a metric, above)
    "EmbeddingCache",
    "cached_encoder",
    "cosine_matrix",
    "tfidf_char_ngrams",
]
