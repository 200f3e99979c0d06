"""Dataset and output hygiene: refusals, near-duplicates, dedupe, contamination, balanced samples
(catalogue items 21–24 and 26)."""

from __future__ import annotations

import re
from collections.abc import Hashable
from typing import Any

from eval._checks import require_int, require_mapping, require_real, require_sequence, require_str_sequence
from eval.metrics.text.tokens import lower_tokens, ngrams, punctuation_free_key

_WHITESPACE_RUN = re.compile(r"\s+")


def detect_refusals(responses: list[str], phrases: list[str]) -> list[Any]:
    """[refusals / #responses, ascending refusal indices]; a refusal contains any lowercased phrase
    after lowercasing and collapsing whitespace runs to one space. [0.0, []] with no responses."""
    require_str_sequence("responses", responses)
    needles = [phrase.lower() for phrase in require_str_sequence("phrases", phrases)]
    if not responses:
        return [0.0, []]
    refused = [
        index
        for index, response in enumerate(responses)
        if any(needle in _WHITESPACE_RUN.sub(" ", response.lower()) for needle in needles)
    ]
    return [len(refused) / len(responses), refused]


def _shingles(text: str, n: int) -> set[tuple[str, ...]]:
    words = lower_tokens(text)
    if not words:
        return set()
    if len(words) < n:
        return {tuple(words)}
    return set(ngrams(words, n))


def near_duplicates(docs: list[str], n: int, threshold: float) -> list[list[int]]:
    """Every [i, j], i < j, whose word n-gram shingle sets have Jaccard ≥ threshold, sorted by i then j.

    A doc of 1..n−1 words has one shingle of all its words; an empty doc has none; Jaccard of two
    empty sets is 0.0.
    """
    require_str_sequence("docs", docs)
    require_int("n", n, minimum=1)
    limit = require_real("threshold", threshold)
    shingle_sets = [_shingles(doc, n) for doc in docs]
    pairs = []
    for i in range(len(docs)):
        for j in range(i + 1, len(docs)):
            union = len(shingle_sets[i] | shingle_sets[j])
            jaccard = len(shingle_sets[i] & shingle_sets[j]) / union if union else 0.0
            if jaccard >= limit:
                pairs.append([i, j])
    return pairs


def dedupe_prompts(prompts: list[str]) -> dict[str, list[Any]]:
    """Keep the first prompt per key (lowercase, punctuation deleted, single-spaced); drop empty keys.

    Returns {"kept": original prompts in order, "removed": ascending indices of the others}.
    """
    require_str_sequence("prompts", prompts)
    seen: set[str] = set()
    kept, removed = [], []
    for index, prompt in enumerate(prompts):
        key = punctuation_free_key(prompt)
        if not key or key in seen:
            removed.append(index)
        else:
            seen.add(key)
            kept.append(prompt)
    return {"kept": kept, "removed": removed}


def contaminated_items(train_docs: list[str], test_items: list[str], n: int) -> list[Any]:
    """[ascending indices of test items sharing any word n-gram with a training doc, flagged / #items].

    Items with fewer than n words are never flagged; 0.0 with no test items.
    """
    require_str_sequence("train_docs", train_docs)
    require_str_sequence("test_items", test_items)
    require_int("n", n, minimum=1)
    train_grams: set[tuple[str, ...]] = set()
    for doc in train_docs:
        train_grams.update(ngrams(lower_tokens(doc), n))
    flagged = [
        index
        for index, item in enumerate(test_items)
        if any(gram in train_grams for gram in ngrams(lower_tokens(item), n))
    ]
    return [flagged, len(flagged) / len(test_items) if test_items else 0.0]


def stratified_sample(examples: list[dict[str, Any]], k: int) -> list[dict[str, Any]]:
    """The examples, in order, kept while fewer than k of the same "label" have been kept."""
    require_sequence("examples", examples)
    require_int("k", k, minimum=0)
    kept_per_label: dict[Hashable, int] = {}
    kept = []
    for index, example in enumerate(examples):
        require_mapping(f"examples[{index}]", example)
        if "label" not in example:
            raise ValueError(f"examples[{index}] has no 'label' key")
        label = example["label"]
        if kept_per_label.get(label, 0) < k:
            kept_per_label[label] = kept_per_label.get(label, 0) + 1
            kept.append(example)
    return kept
