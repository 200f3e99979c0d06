"""Metrics: pure functions over lists and arrays, each importable by name from ``eval``
(``from eval import token_f1``); the formulas are in docs/metrics.md.

Modules by job:

- ``overlap`` (exact match, token F1, ROUGE-L, n-gram precision), ``retrieval`` (recall@k, hit
  rate, MRR), ``sampling`` (pass@k, voting, option picking), ``calibration``, ``ratings`` (win
  rates, sequential Elo), ``hygiene`` (refusals, duplicates, contamination, balanced samples),
  ``classification`` (TCM-SD macro-F1, accuracy by slice), ``difficulty`` (hard subsets);
- ``text/``: what the metrics read text with — tokenisation rules, longest common subsequence,
  prompt building and the parsing of model output (JSON, tool calls, final answers);
- ``tcm/``: the TCM benchmarks' families — LingLan (char-F1, DTR-F1, multi-choice, extraction,
  doses) and the CHIP TCM task (its score and its submission file).

Adding a metric is its module (here, or in the room of its specification) plus one import line
below: ``__all__`` is every public name imported here, and ``eval`` re-exports all of them.
"""

# ruff: noqa: F401 -- every import here is a re-export, listed in the computed __all__ below

from types import ModuleType as _ModuleType

from eval.metrics.calibration import calibration_error
from eval.metrics.classification import macro_f1, slice_report
from eval.metrics.difficulty import composite_difficulty, hard_subset
from eval.metrics.hygiene import contaminated_items, dedupe_prompts, detect_refusals, near_duplicates, stratified_sample
from eval.metrics.overlap import best_f1, exact_match, ngram_precision, normalize_answer, rouge_l, token_f1
from eval.metrics.ratings import elo_ratings, win_rates
from eval.metrics.retrieval import hit_rate, mean_reciprocal_rank, recall_at_k
from eval.metrics.sampling import majority_vote, mean_pass_at_k, pick_option
from eval.metrics.tcm.chip import CHIP_WEIGHTS, chip_choice_score, chip_extraction_score, chip_total, rouge_l_chars
from eval.metrics.tcm.chip_format import (
    ChipAnswer,
    ChipFormatError,
    chip_case_score,
    format_chip_line,
    parse_chip_line,
    read_chip_submission,
    write_chip_submission,
)
from eval.metrics.tcm.linglan import (
    char_f1,
    char_f1_matrix,
    dose_score,
    dtr_f1,
    dtr_f1_embedding,
    extraction_prf,
    macro_mean,
    multi_choice_score,
    multi_choice_scores,
    normalize_entity,
)
from eval.metrics.text.parsing import extract_json, final_answer, parse_tool_call, validate_output
from eval.metrics.text.prompts import fill_template, select_examples, truncate_conversation

# The 28 functions of the eval-functions catalogue (../shared/seeds/eval-functions-catalogue.txt), in its order.
CATALOGUE = (
    "normalize_answer",
    "exact_match",
    "token_f1",
    "best_f1",
    "rouge_l",
    "ngram_precision",
    "recall_at_k",
    "hit_rate",
    "mean_pass_at_k",
    "majority_vote",
    "pick_option",
    "calibration_error",
    "win_rates",
    "elo_ratings",
    "fill_template",
    "select_examples",
    "extract_json",
    "parse_tool_call",
    "validate_output",
    "final_answer",
    "detect_refusals",
    "near_duplicates",
    "dedupe_prompts",
    "contaminated_items",
    "truncate_conversation",
    "stratified_sample",
    "mean_reciprocal_rank",
    "slice_report",
)

# Every public name imported above (not the submodules, not CATALOGUE itself), so that a new metric
# needs no second list; keep this statement last.
__all__ = sorted(
    name
    for name, value in list(globals().items())
    if not name.startswith("_") and not isinstance(value, _ModuleType) and name != "CATALOGUE"
)
