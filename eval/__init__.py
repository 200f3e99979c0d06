"""Evaluation metrics, importable by name: ``from eval import token_f1``.

Modules by job: ``overlap`` (exact match, token F1, ROUGE-L, n-gram precision), ``retrieval``,
``sampling`` (pass@k, voting, option picking), ``calibration``, ``ratings`` (win rates, Elo),
``prompts``, ``parsing``, ``hygiene`` (refusals, duplicates, contamination, balanced samples),
``classification`` (TCM-SD macro-F1, accuracy by slice), ``linglan`` (char-F1, DTR-F1,
multi-choice, extraction, doses), ``difficulty`` (hard subsets), ``chip`` and ``chip_format``
(the CHIP TCM task).
"""

from eval.calibration import calibration_error
from eval.chip import CHIP_WEIGHTS, chip_choice_score, chip_extraction_score, chip_total, rouge_l_chars
from eval.chip_format import (
    ChipAnswer,
    ChipFormatError,
    chip_case_score,
    format_chip_line,
    parse_chip_line,
    read_chip_submission,
    write_chip_submission,
)
from eval.classification import macro_f1, slice_report
from eval.difficulty import composite_difficulty, hard_subset
from eval.hygiene import contaminated_items, dedupe_prompts, detect_refusals, near_duplicates, stratified_sample
from eval.linglan import (
    char_f1,
    char_f1_matrix,
    dose_score,
    dtr_f1,
    extraction_prf,
    macro_mean,
    multi_choice_score,
    multi_choice_scores,
    normalize_entity,
)
from eval.overlap import best_f1, exact_match, ngram_precision, normalize_answer, rouge_l, token_f1
from eval.parsing import extract_json, final_answer, parse_tool_call, validate_output
from eval.prompts import fill_template, select_examples, truncate_conversation
from eval.ratings import elo_ratings, win_rates
from eval.retrieval import hit_rate, mean_reciprocal_rank, recall_at_k
from eval.sampling import majority_vote, mean_pass_at_k, pick_option

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

__all__ = [
    *CATALOGUE,
    "CHIP_WEIGHTS",
    "ChipAnswer",
    "ChipFormatError",
    "char_f1",
    "char_f1_matrix",
    "chip_case_score",
    "chip_choice_score",
    "chip_extraction_score",
    "chip_total",
    "composite_difficulty",
    "dose_score",
    "dtr_f1",
    "extraction_prf",
    "format_chip_line",
    "hard_subset",
    "macro_f1",
    "macro_mean",
    "multi_choice_score",
    "multi_choice_scores",
    "normalize_entity",
    "parse_chip_line",
    "read_chip_submission",
    "rouge_l_chars",
    "write_chip_submission",
]

# Items and loaders: the item model every scorer and the scheduler share.
from eval.items import GOLD_TYPES, TRACKS, Item, ItemError, Source  # noqa: E402
from eval.loaders import (  # noqa: E402
    DuplicateItemError,
    ItemFormatError,
    LoadResult,
    Skipped,
    load_demo_suite,
    load_items,
)

__all__ += [
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
]

# Scorers: judge-free scoring dispatched by gold type through one registry.
from eval.scorers import SCORERS, NeedsJudge, UnknownGoldTypeError, register, score_answer  # noqa: E402

__all__ += ["SCORERS", "NeedsJudge", "UnknownGoldTypeError", "register", "score_answer"]

# Text encoders and embedding DTR-F1. Decision recognition itself is imported from
# eval.decision_recognition: importing it here would make `python -m eval.decision_recognition` warn.
from eval.embedding_cache import EmbeddingCache, cached_encoder  # noqa: E402
from eval.encoders import cosine_matrix, tfidf_char_ngrams  # noqa: E402
from eval.linglan import dtr_f1_embedding  # noqa: E402

__all__ += ["EmbeddingCache", "cached_encoder", "cosine_matrix", "dtr_f1_embedding", "tfidf_char_ngrams"]
