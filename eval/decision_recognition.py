"""Decision recognition (DR): open-label and classification items turned into single-choice items.

LingLan (``../shared/seeds/linglan-methodology.txt``, step 6 and example 3) scores open diagnosis
by asking the model to pick the gold label among K options whose K−1 distractors are the labels
semantically nearest to it. For one item with gold label g and a label set L:

1. L is deduplicated by normalised form (``normalize_entity``: NFKC, casefold, no whitespace,
   no edge punctuation), keeping each label's first spelling; g must be in L after normalisation.
2. Every label and gold is encoded once, in one ``encode`` call; s(l) = cos(e(g), e(l)), rounded
   to 1e-6 (``eval.encoders.rounded``) before it is compared, ranked or recorded.
3. Candidates: labels whose normalised form differs from g's (a spelling of the gold is never a
   distractor) with lo ≤ s(l) ≤ hi. The band drops labels too far to tempt (< lo) and near-copies
   of the gold (> hi, e.g. 气滞血瘀 against 气滞血瘀证).
4. Distractors: the K−1 candidates with the highest s. Ties go to the label first in code-point
   order, so the choice never depends on the label file's order.
5. Options: gold and distractors sorted by ``sha256(f"{seed}|{item id}|{text}")`` (hex), lettered
   A, B, …; the gold is its letter. The order depends on nothing but the seed, the id and the
   texts: the same on every run and machine (Python's ``hash()`` is salted per process).

What is reported as a ``Problem`` instead of an item, never padded or guessed:

- ``too_few_in_band``: fewer than K−1 candidates in the band (the detail says how many and the
  nearest cosine outside it); widen the band, lower K or add labels;
- ``gold_not_in_labels``: the gold is not in the label set, so its neighbours were never embedded
  in the same space; add it to the label file;
- ``multi_gold``: an open-label item with several distinct golds. A single-choice item has one
  correct option, and picking one gold would make the others silently wrong; split such items
  upstream or name a primary label;
- ``not_convertible``: a gold type other than open_label and classification;
- ``unscorable``: the source item is itself listed as unscorable;
- ``duplicate_id``: two source items map to one DR id (same task and local id in suites merged
  under one ``suite`` name); the first is kept — convert such suites separately.

A classification item's own ``meta["labels"]`` is not used: the label set is the one given, so
every item of a run draws distractors from the same ontology.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from eval._checks import require_int, require_real, require_str
from eval.encoders import Encoder, checked_vectors, cosine_matrix, rounded
from eval.items import Item
from eval.linglan import normalize_entity
from eval.loaders.tcm_sd import INSTRUCTION as TCM_SD_INSTRUCTION

CONVERTIBLE = ("open_label", "classification")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
TASK_SUFFIX = "-DR"
DR_INSTRUCTION = "请从下列选项中选出最符合的一项，只回答选项字母。"
# Open-answer instructions that a DR question replaces rather than contradicts.
OPEN_INSTRUCTIONS = (TCM_SD_INSTRUCTION,)

ProblemKind = Literal["not_convertible", "unscorable", "multi_gold", "gold_not_in_labels", "too_few_in_band", "duplicate_id"]


@dataclass(frozen=True)
class Problem:
    """A source item that yields no DR item: which one, where it came from, why, and what to do."""

    item_id: str
    source: str  # "path:line"
    kind: ProblemKind
    detail: str

    def __str__(self) -> str:
        return f"{self.source}: {self.item_id}: {self.kind}: {self.detail}"


def option_order_key(seed: int, item_id: str, text: str) -> str:
    """sha256 of ``f"{seed}|{item_id}|{text}"`` as hex: sorting options by it is a seeded, portable shuffle."""
    return hashlib.sha256(f"{seed}|{item_id}|{text}".encode()).hexdigest()


def nearest_in_band(
    candidates: Sequence[tuple[str, float]], band: tuple[float, float], count: int
) -> list[tuple[str, float]]:
    """The ``count`` (label, similarity) pairs with the highest similarity inside [lo, hi] (inclusive),
    highest first, ties by label code points; fewer when fewer are in the band. Labels must be distinct."""
    low, high = band
    inside = sorted(((label, sim) for label, sim in candidates if low <= sim <= high), key=lambda pair: (-pair[1], pair[0]))
    return inside[:count]


def dr_question(item: Item) -> dict[str, Any]:
    """The DR item's question (or messages): the source text, its open-answer instruction replaced by
    ``DR_INSTRUCTION`` when it is a known one, else ``DR_INSTRUCTION`` appended on its own line."""

    def rewrite(text: str) -> str:
        for instruction in OPEN_INSTRUCTIONS:
            if text.rstrip().endswith(instruction):
                return text.rstrip()[: -len(instruction)] + DR_INSTRUCTION
        return f"{text.rstrip()}\n{DR_INSTRUCTION}"

    if item.question is not None:
        return {"question": rewrite(item.question)}
    assert item.messages is not None
    messages = [dict(message) for message in item.messages]
    messages[-1]["content"] = rewrite(messages[-1]["content"])
    return {"messages": messages}


def _check_options(k: int, band: tuple[float, float], seed: int, encoder_name: str) -> tuple[float, float]:
    require_int("k", k, minimum=2)
    if k > len(LETTERS):
        raise ValueError(f"k must be at most {len(LETTERS)} (one letter per option), got {k}")
    require_int("seed", seed)
    if not require_str("encoder_name", encoder_name).strip():
        raise ValueError("encoder_name must name the encoder (it is recorded in every item's provenance)")
    if len(band) != 2:
        raise ValueError(f"band must be (low, high), got {band!r}")
    low = require_real("band low", band[0], low=-1.0, high=1.0)
    high = require_real("band high", band[1], low=-1.0, high=1.0)
    if low > high:
        raise ValueError(f"band low must be <= band high, got [{low}, {high}]")
    return low, high


def _label_set(labels: Sequence[str]) -> dict[str, str]:
    """{normalised form: first spelling} in the given order; a blank label is an error naming its index."""
    by_key: dict[str, str] = {}
    for index, label in enumerate(labels):
        key = normalize_entity(require_str(f"labels[{index}]", label))
        if not key:
            raise ValueError(f"labels[{index}] is blank ({label!r}); remove it from the label list")
        by_key.setdefault(key, label.strip())
    if not by_key:
        raise ValueError("the label set is empty; give at least k labels")
    return by_key


def _single_gold(item: Item, by_key: Mapping[str, str]) -> tuple[str | None, Problem | None]:
    """(gold label, None) for a convertible item whose gold is in the label set, or (None, the reason it is not)."""

    def problem(kind: ProblemKind, detail: str) -> tuple[None, Problem]:
        return None, Problem(item.id, str(item.source), kind, detail)

    if item.gold_type not in CONVERTIBLE:
        return problem("not_convertible", f"gold_type {item.gold_type} (DR converts {' and '.join(CONVERTIBLE)})")
    if not item.scorable:
        return problem("unscorable", f"the source item is unscorable: {item.skip_reason}")
    golds = [item.gold] if item.gold_type == "classification" else list(item.gold)
    distinct = list(dict.fromkeys(normalize_entity(gold) for gold in golds))
    if len(distinct) > 1:
        return problem("multi_gold", f"{len(distinct)} distinct gold labels {golds}; DR needs exactly one — split the item")
    if distinct[0] not in by_key:
        return problem("gold_not_in_labels", f"gold {golds[0]!r} is not in the label set; add it to the label list")
    return golds[0].strip(), None


def build_choice_items(
    items: Sequence[Item],
    labels: Sequence[str],
    encode: Encoder,
    *,
    encoder_name: str,
    k: int = 4,
    band: tuple[float, float] = (0.5, 0.95),
    seed: int = 0,
    suite: str | None = None,
) -> tuple[list[Item], list[Problem]]:
    """DR items (gold_type single_choice, task ``<task>-DR``, same local id) and the Problems, in input order.

    ``encode`` is called once with every label and gold text; ``encoder_name`` identifies it in
    each item's ``meta`` (with ``source_item_id``, ``gold_label``, ``band``, ``k``, ``seed`` and
    each distractor's similarity). ``suite`` renames the suite (default: the source item's).
    """
    low, high = _check_options(k, band, seed, encoder_name)
    by_key = _label_set(labels)
    golds: list[tuple[int, Item, str]] = []
    problems: list[tuple[int, Problem]] = []
    for position, item in enumerate(items):
        gold, problem = _single_gold(item, by_key)
        if problem is not None:
            problems.append((position, problem))
        else:
            golds.append((position, item, gold or ""))
    built: list[tuple[int, Item]] = []
    first_source: dict[str, str] = {}
    if golds:
        label_keys = list(by_key)
        similarity = _similarities(encode, encoder_name, [gold for _, _, gold in golds], [by_key[key] for key in label_keys])
        for (position, item, gold), sims in zip(golds, similarity):
            gold_key = normalize_entity(gold)
            candidates = [(by_key[key], rounded(sim)) for key, sim in zip(label_keys, sims) if key != gold_key]
            picked = nearest_in_band(candidates, (low, high), k - 1)
            if len(picked) < k - 1:
                problems.append((position, _too_few(item, candidates, len(picked), k, (low, high))))
                continue
            choice = _choice_item(item, gold, picked, encoder_name, k, (low, high), seed, suite)
            if choice.id in first_source:
                detail = f"{choice.id} is already built from {first_source[choice.id]}; convert these suites separately"
                problems.append((position, Problem(item.id, str(item.source), "duplicate_id", detail)))
                continue
            first_source[choice.id] = item.id
            built.append((position, choice))
    return [item for _, item in sorted(built, key=lambda p: p[0])], [p for _, p in sorted(problems, key=lambda p: p[0])]


def _similarities(encode: Encoder, encoder_name: str, golds: Sequence[str], labels: Sequence[str]) -> np.ndarray:
    """cos(golds[i], labels[j]) as a (len(golds), len(labels)) array, from one ``encode`` call over
    the distinct texts (labels first, so a batch-dependent encoder such as TF-IDF sees the label set)."""
    vocabulary = list(dict.fromkeys([*labels, *golds]))
    vectors = checked_vectors(encode(vocabulary), len(vocabulary), encoder_name)
    row = {text: index for index, text in enumerate(vocabulary)}
    return cosine_matrix(vectors[[row[gold] for gold in golds]], vectors[[row[label] for label in labels]])


def _too_few(item: Item, candidates: Sequence[tuple[str, float]], found: int, k: int, band: tuple[float, float]) -> Problem:
    low, high = band
    below = [sim for _, sim in candidates if sim < low]
    above = [sim for _, sim in candidates if sim > high]
    nearest = []
    if below:
        nearest.append(f"highest below the band {max(below):.3f}")
    if above:
        nearest.append(f"lowest above it {min(above):.3f}")
    detail = (f"{found} label(s) with cosine in [{low}, {high}] to the gold, {k - 1} needed"
              + (f" ({'; '.join(nearest)})" if nearest else "") + "; widen the band, lower k or add labels")
    return Problem(item.id, str(item.source), "too_few_in_band", detail)


def _choice_item(
    item: Item, gold: str, picked: Sequence[tuple[str, float]], encoder_name: str, k: int,
    band: tuple[float, float], seed: int, suite: str | None,
) -> Item:  # fmt: skip
    """One DR item from a checked source item, its gold spelling and its distractors."""
    suite_name = suite or item.suite
    task = f"{item.task}{TASK_SUFFIX}"
    new_id = Item.make_id(suite_name, task, item.local_id)
    texts = sorted([gold, *(label for label, _ in picked)], key=lambda text: option_order_key(seed, new_id, text))
    options = tuple(zip(LETTERS, texts))
    meta: Mapping[str, Any] = {
        "source_item_id": item.id, "gold_label": gold, "encoder": encoder_name, "band": [band[0], band[1]], "k": k,
        "seed": seed, "distractors": [{"label": label, "similarity": sim} for label, sim in picked],
    }  # fmt: skip
    return Item(
        id=new_id, suite=suite_name, track=item.track, task=task, gold_type="single_choice",
        gold=LETTERS[texts.index(gold)], source=item.source, options=options, domain=item.domain, meta=meta,
        **dr_question(item),
    )  # fmt: skip


if __name__ == "__main__":  # python -m eval.decision_recognition: the CLI has its own module
    import sys

    from eval.decision_recognition_cli import main

    sys.exit(main())
