"""Nested tiers of a suite — mini 30 ⊂ medium 100 ⊂ large (all) — frozen in files a user can diff and cite.

``heuristic`` gives every item a model-free difficulty, ``order`` ranks the items (coverage seeds,
then a round robin over (track, task, domain) buckets), ``files`` writes and reads
``subsets/{mini,medium,large}.yaml``, ``select`` applies a tier to a run's items (``pool.run
--subset NAME``), ``agreement`` compares the heuristic with a run's observed difficulty.
``python -m eval.subsets --help`` writes the files.
"""

from eval.subsets.files import DEFAULT_DIR, FrozenTier, TierFileError, data_fingerprint, read_tier
from eval.subsets.heuristic import difficulties
from eval.subsets.order import TIER_SIZES, named_subset, subset_order, tier_candidates
from eval.subsets.select import TierError, TierSelection, select_tier

# The name pool.items_source and older callers import: the tiers' sizes (None: every item).
SUBSET_SIZES = TIER_SIZES

__all__ = [
    "DEFAULT_DIR",
    "SUBSET_SIZES",
    "TIER_SIZES",
    "FrozenTier",
    "TierError",
    "TierFileError",
    "TierSelection",
    "data_fingerprint",
    "difficulties",
    "named_subset",
    "read_tier",
    "select_tier",
    "subset_order",
    "tier_candidates",
]
