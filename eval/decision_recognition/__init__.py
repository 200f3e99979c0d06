"""Decision recognition (DR): open-label and classification items turned into single-choice items
whose distractors are the labels nearest the gold (LingLan, step 6).

- ``choices``: the conversion — label space, distractor band, options and their order, and the
  ``Problem`` reported for an item that cannot be converted (its docstring gives every rule);
- ``cli``: ``python -m eval.decision_recognition SUITE... --labels LABELS --out FILE.jsonl``
  (``__main__`` hands it to ``pool.decision_recognition``, which adds the embeddings client).
"""

from eval.decision_recognition.choices import (
    DEFAULT_BAND,
    DEFAULT_QUANTILES,
    DR_INSTRUCTION,
    LETTERS,
    Band,
    Problem,
    ResolvedBand,
    build_choice_items,
    label_space,
    nearest_in_band,
    option_order_key,
    resolve_band,
)

__all__ = [
    "DEFAULT_BAND",
    "DEFAULT_QUANTILES",
    "DR_INSTRUCTION",
    "LETTERS",
    "Band",
    "Problem",
    "ResolvedBand",
    "build_choice_items",
    "label_space",
    "nearest_in_band",
    "option_order_key",
    "resolve_band",
]
