"""Decision recognition (DR): open-label and classification items turned into single-choice items.

LingLan (``../shared/seeds/linglan-methodology.txt``, step 6 and example 3) scores open diagnosis
by asking the model to pick the gold label among K options whose K−1 distractors are the labels
semantically nearest to it. For one run over items with golds G and a given label list L:

1. The label space S is L followed by G, deduplicated by normalised form (``normalize_entity``:
   NFKC, casefold, no whitespace, no edge punctuation), keeping each label's first spelling. The
   golds belong in S because a gold outside it has no neighbours measured in the same space, and a
   benchmark's own golds are part of its ontology. With ``include_golds=False`` S is L alone.
2. Every label of S is encoded once, in one ``encode`` call; c(a, b) = cos(e(a), e(b)) is rounded
   to 1e-6 (``eval.encoders.rounded``) before it is compared, ranked or recorded. A gold is
   embedded as its spelling in S, so its cosines are label-pair cosines of S.
3. The band [lo, hi] is relative by default: with the n = |S|(|S|−1)/2 pair cosines sorted
   x₀ ≤ … ≤ x₍ₙ₋₁₎ and quantiles (q_lo, q_hi),

       Q(q) = x₍ⱼ₎ + (h − j)·(x₍ⱼ₊₁₎ − x₍ⱼ₎),   h = q·(n − 1), j = ⌊h⌋     (numpy's "linear" quantile)
       lo = Q(q_lo), hi = Q(q_hi)                                        (both rounded to 1e-6)

   Cosines of one encoder are not comparable with another's (character TF-IDF puts distinct
   syndromes near 0.1, a sentence encoder near 0.7), so an absolute band that suits one gives
   nothing with the other; a quantile band means "closer than q_lo of all label pairs, but not among
   the closest 1 − q_hi" under any encoder, and picks the same distractors when the encoder's
   cosines are shifted or rescaled. ``Band.cosines(lo, hi)`` gives an absolute band instead.
4. Candidates: labels of S other than the gold with lo ≤ c(gold, l) ≤ hi. The band drops labels too
   far to tempt (< lo) and near-copies of the gold (> hi, e.g. 气滞血瘀 against 气滞血瘀证).
5. Distractors: the K−1 candidates with the highest c. Ties go to the label first in code-point
   order, so the choice never depends on the label file's order.
6. Options: gold and distractors sorted by ``sha256(f"{seed}|{item id}|{text}")`` (hex), lettered
   A, B, …; the gold is its letter. The order depends on nothing but the seed, the id and the
   texts: the same on every run and machine (Python's ``hash()`` is salted per process).

Each item's ``meta["band"]`` records the band actually used — ``quantiles`` (or null for an
absolute band), the resolved ``cosines`` and the number of ``label_pairs`` — and
``meta["label_space_size"]`` is |S|, so a run can be repeated or pinned with ``Band.cosines``.
Because the golds join S, items converted together share one label space; converting a subset
may change S, hence the band and the distractors.

What is reported as a ``Problem`` instead of an item, never padded or guessed:

- ``too_few_in_band``: fewer than K−1 candidates in the band (the detail says how many and the
  nearest cosine outside it), or fewer than K labels in S; widen the band, lower K or add labels;
- ``gold_not_in_labels``: only with ``include_golds=False`` (a closed label list, e.g. a fixed
  ontology): the gold is not in L; add it to the label list or let the golds join the space;
- ``multi_gold``: an open-label item with several distinct golds. A single-choice item has one
  correct option, and picking one gold would make the others silently wrong; split such items
  upstream or name a primary label;
- ``not_convertible``: a gold type other than open_label and classification;
- ``unscorable``: the source item is itself listed as unscorable;
- ``duplicate_id``: two source items map to one DR id (same task and local id in suites merged
  under one ``suite`` name); the first is kept — convert such suites separately.

Only the golds of items that can be converted (one gold, scorable, a convertible type) join S.
A classification item's own ``meta["labels"]`` is not used: the label space is the one built
here, so every item of a run draws distractors from the same ontology.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from eval._checks import require_int, require_real, require_str
from eval.encoders.vectors import Encoder, checked_vectors, cosine_matrix, rounded
from eval.items import Item
from eval.loaders.formats.tcm_sd import INSTRUCTION as TCM_SD_INSTRUCTION
from eval.metrics.tcm.linglan import normalize_entity

CONVERTIBLE = ("open_label", "classification")
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
TASK_SUFFIX = "-DR"
DR_INSTRUCTION = "请从下列选项中选出最符合的一项，只回答选项字母。"
# Open-answer instructions that a DR question replaces rather than contradicts.
OPEN_INSTRUCTIONS = (TCM_SD_INSTRUCTION,)
# Default band, as quantiles of the label-pair cosines: a distractor is at least as close to the
# gold as the median pair of labels, and not among the closest 1% of pairs (spelling variants and
# synonyms that normalisation does not merge sit there).
DEFAULT_QUANTILES = (0.5, 0.99)

ProblemKind = Literal[
    "not_convertible", "unscorable", "multi_gold", "gold_not_in_labels", "too_few_in_band", "duplicate_id"
]
BandUnit = Literal["quantile", "cosine"]


@dataclass(frozen=True)
class Problem:
    """A source item that yields no DR item: which one, where it came from, why, and what to do."""

    item_id: str
    source: str  # "path:line"
    kind: ProblemKind
    detail: str

    def __str__(self) -> str:
        return f"{self.source}: {self.item_id}: {self.kind}: {self.detail}"


@dataclass(frozen=True)
class Band:
    """The inclusive band [low, high] a distractor's cosine to the gold must lie in, as asked for.

    ``unit="quantile"``: low and high are quantiles in [0, 1] of the label space's pair cosines,
    resolved to cosines per run (module docstring, step 3). ``unit="cosine"``: absolute cosines in
    [-1, 1], meaningful for one encoder only. Build with ``Band.quantiles`` or ``Band.cosines``.
    """

    low: float
    high: float
    unit: BandUnit = "quantile"

    def __post_init__(self) -> None:
        if self.unit not in ("quantile", "cosine"):
            raise ValueError(f"band unit must be 'quantile' or 'cosine', got {self.unit!r}")
        floor = 0.0 if self.unit == "quantile" else -1.0
        object.__setattr__(self, "low", require_real(f"band low ({self.unit})", self.low, low=floor, high=1.0))
        object.__setattr__(self, "high", require_real(f"band high ({self.unit})", self.high, low=floor, high=1.0))
        if self.low > self.high:
            raise ValueError(f"band low must be <= band high, got [{self.low}, {self.high}] ({self.unit})")

    @classmethod
    def quantiles(cls, low: float, high: float) -> Band:
        """A band relative to the encoder: quantiles of the label-pair cosines."""
        return cls(low, high, "quantile")

    @classmethod
    def cosines(cls, low: float, high: float) -> Band:
        """An absolute band of cosines, for one known encoder."""
        return cls(low, high, "cosine")


DEFAULT_BAND = Band.quantiles(*DEFAULT_QUANTILES)


@dataclass(frozen=True)
class ResolvedBand:
    """The band in cosines as used for a run, with the quantiles it came from (None for an absolute band)."""

    low: float
    high: float
    quantiles: tuple[float, float] | None
    label_pairs: int

    def record(self) -> dict[str, Any]:
        """What each item's ``meta["band"]`` holds, enough to repeat the run with ``Band.cosines``."""
        quantiles = None if self.quantiles is None else [self.quantiles[0], self.quantiles[1]]
        return {"quantiles": quantiles, "cosines": [self.low, self.high], "label_pairs": self.label_pairs}

    def describe(self) -> str:
        """E.g. ``cosine in [0.013, 0.43] (quantiles 0.5-0.99 of 300 label-pair cosines)``."""
        where = f"cosine in [{self.low}, {self.high}]"
        if self.quantiles is None:
            return where
        return f"{where} (quantiles {self.quantiles[0]}-{self.quantiles[1]} of {self.label_pairs} label-pair cosines)"


def resolve_band(band: Band, pair_cosines: np.ndarray) -> ResolvedBand:
    """``band`` in cosines: a cosine band as given; a quantile band as Q(q_lo), Q(q_hi) over
    ``pair_cosines`` (numpy's linear quantile, module docstring step 3), rounded to 1e-6."""
    pairs = int(pair_cosines.size)
    if band.unit == "cosine":
        return ResolvedBand(band.low, band.high, None, pairs)
    if pairs == 0:
        raise ValueError("a quantile band needs at least two labels in the label space")
    low, high = np.quantile(pair_cosines, [band.low, band.high])
    return ResolvedBand(rounded(low), rounded(high), (band.low, band.high), pairs)


def option_order_key(seed: int, item_id: str, text: str) -> str:
    """sha256 of ``f"{seed}|{item_id}|{text}"`` as hex: sorting options by it is a seeded, portable shuffle."""
    return hashlib.sha256(f"{seed}|{item_id}|{text}".encode()).hexdigest()


def nearest_in_band(
    candidates: Sequence[tuple[str, float]], band: tuple[float, float], count: int
) -> list[tuple[str, float]]:
    """The ``count`` (label, similarity) pairs with the highest similarity inside [lo, hi] (inclusive),
    highest first, ties by label code points; fewer when fewer are in the band. Labels must be distinct."""
    low, high = band
    inside = sorted(
        ((label, sim) for label, sim in candidates if low <= sim <= high), key=lambda pair: (-pair[1], pair[0])
    )
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


def _check_options(k: int, band: Band, seed: int, encoder_name: str) -> None:
    require_int("k", k, minimum=2)
    if k > len(LETTERS):
        raise ValueError(f"k must be at most {len(LETTERS)} (one letter per option), got {k}")
    require_int("seed", seed)
    if not require_str("encoder_name", encoder_name).strip():
        raise ValueError("encoder_name must name the encoder (it is recorded in every item's provenance)")
    if not isinstance(band, Band):
        raise TypeError(f"band must be a Band (Band.quantiles(low, high) or Band.cosines(low, high)), got {band!r}")


def _label_set(labels: Sequence[str]) -> dict[str, str]:
    """{normalised form: first spelling} in the given order; a blank label is an error naming its index."""
    by_key: dict[str, str] = {}
    for index, label in enumerate(labels):
        key = normalize_entity(require_str(f"labels[{index}]", label))
        if not key:
            raise ValueError(f"labels[{index}] is blank ({label!r}); remove it from the label list")
        by_key.setdefault(key, label.strip())
    return by_key


def _single_gold(item: Item) -> tuple[str | None, Problem | None]:
    """(gold label, None) for an item that can be converted, or (None, the reason it cannot)."""

    def problem(kind: ProblemKind, detail: str) -> tuple[None, Problem]:
        return None, Problem(item.id, str(item.source), kind, detail)

    if item.gold_type not in CONVERTIBLE:
        return problem("not_convertible", f"gold_type {item.gold_type} (DR converts {' and '.join(CONVERTIBLE)})")
    if not item.scorable:
        return problem("unscorable", f"the source item is unscorable: {item.skip_reason}")
    golds = [item.gold] if item.gold_type == "classification" else list(item.gold)
    distinct = list(dict.fromkeys(normalize_entity(gold) for gold in golds))
    if len(distinct) > 1:
        return problem(
            "multi_gold", f"{len(distinct)} distinct gold labels {golds}; DR needs exactly one — split the item"
        )
    return golds[0].strip(), None


def build_choice_items(
    items: Sequence[Item],
    labels: Sequence[str],
    encode: Encoder,
    *,
    encoder_name: str,
    k: int = 4,
    band: Band = DEFAULT_BAND,
    seed: int = 0,
    suite: str | None = None,
    include_golds: bool = True,
) -> tuple[list[Item], list[Problem]]:
    """DR items (gold_type single_choice, task ``<task>-DR``, same local id) and the Problems, in input order.

    The label space is ``labels`` plus the golds of the convertible items (``include_golds=False``:
    ``labels`` alone, and a gold outside it is a ``gold_not_in_labels`` Problem). ``encode`` is called
    once with every label of that space; ``encoder_name`` identifies it in each item's ``meta`` (with
    ``source_item_id``, ``gold_label``, ``band`` as resolved, ``label_space_size``, ``k``, ``seed`` and
    each distractor's similarity). ``suite`` renames the suite (default: the source item's).
    """
    _check_options(k, band, seed, encoder_name)
    given = _label_set(labels)
    if not given and not include_golds:
        raise ValueError("the label set is empty; give at least k labels")
    golds: list[tuple[int, Item, str]] = []
    problems: list[tuple[int, Problem]] = []
    for position, item in enumerate(items):
        gold, problem = _single_gold(item)
        if problem is None and not include_golds and normalize_entity(gold or "") not in given:
            detail = f"gold {gold!r} is not in the label list; add it there, or let the golds join the label space"
            problem = Problem(item.id, str(item.source), "gold_not_in_labels", detail)
        if problem is not None:
            problems.append((position, problem))
        else:
            golds.append((position, item, gold or ""))
    space = label_space(given, [gold for _, _, gold in golds] if include_golds else [])
    built: list[tuple[int, Item]] = []
    if len(space) < k:
        problems += [(position, _space_too_small(item, len(space), k)) for position, item, _ in golds]
    elif golds:
        context = _Context(encoder_name, k, seed, suite, len(space))
        built, more = _convert(golds, space, _label_cosines(encode, encoder_name, list(space.values())), band, context)
        problems += more
    return [item for _, item in sorted(built, key=lambda p: p[0])], [p for _, p in sorted(problems, key=lambda p: p[0])]


def label_space(given: Mapping[str, str], golds: Sequence[str]) -> dict[str, str]:
    """{normalised form: spelling}: the given labels, then each gold not already there, in order."""
    space = dict(given)
    for gold in golds:
        space.setdefault(normalize_entity(gold), gold.strip())
    return space


@dataclass(frozen=True)
class _Context:
    """What every item of one run shares, recorded in its meta."""

    encoder_name: str
    k: int
    seed: int
    suite: str | None
    space_size: int


def _convert(
    golds: Sequence[tuple[int, Item, str]], space: Mapping[str, str], cosines: np.ndarray, band: Band, context: _Context
) -> tuple[list[tuple[int, Item]], list[tuple[int, Problem]]]:
    """(position, DR item) and (position, Problem) for the checked golds, given the space's cosine matrix."""
    resolved = resolve_band(band, cosines[np.triu_indices(len(space), 1)])
    row_of = {key: row for row, key in enumerate(space)}
    spellings = list(space.values())
    built: list[tuple[int, Item]] = []
    problems: list[tuple[int, Problem]] = []
    first_source: dict[str, str] = {}
    for position, item, gold in golds:
        row = row_of[normalize_entity(gold)]
        candidates = [(spellings[column], float(sim)) for column, sim in enumerate(cosines[row]) if column != row]
        picked = nearest_in_band(candidates, (resolved.low, resolved.high), context.k - 1)
        if len(picked) < context.k - 1:
            problems.append((position, _too_few(item, candidates, len(picked), context.k, resolved)))
            continue
        choice = _choice_item(item, gold, picked, resolved, context)
        if choice.id in first_source:
            detail = f"{choice.id} is already built from {first_source[choice.id]}; convert these suites separately"
            problems.append((position, Problem(item.id, str(item.source), "duplicate_id", detail)))
            continue
        first_source[choice.id] = item.id
        built.append((position, choice))
    return built, problems


def _label_cosines(encode: Encoder, encoder_name: str, texts: Sequence[str]) -> np.ndarray:
    """c(a, b) for every pair of ``texts`` from one ``encode`` call, rounded to 1e-6, 1 on the diagonal.

    Each pair is rounded once, from the upper triangle, and mirrored, so c(a, b) == c(b, a) exactly:
    a gold's cosines are then the very pair cosines the band's quantiles are taken over. Time and
    memory grow as |S|²: well under a second for the few hundred labels of a syndrome ontology.
    """
    vectors = checked_vectors(encode(list(texts)), len(texts), encoder_name)
    raw = cosine_matrix(vectors, vectors)
    upper = np.triu_indices(len(texts), 1)
    values = np.array([rounded(value) for value in raw[upper]], dtype=float)
    matrix = np.eye(len(texts))
    matrix[upper] = values
    matrix[upper[1], upper[0]] = values
    return matrix


def _space_too_small(item: Item, size: int, k: int) -> Problem:
    detail = f"the label space has {size} label(s) and k={k} options need {k}; add labels or lower k"
    return Problem(item.id, str(item.source), "too_few_in_band", detail)


def _too_few(item: Item, candidates: Sequence[tuple[str, float]], found: int, k: int, band: ResolvedBand) -> Problem:
    below = [sim for _, sim in candidates if sim < band.low]
    above = [sim for _, sim in candidates if sim > band.high]
    nearest = []
    if below:
        nearest.append(f"highest below the band {max(below):.3f}")
    if above:
        nearest.append(f"lowest above it {min(above):.3f}")
    detail = (
        f"{found} label(s) with {band.describe()} to the gold, {k - 1} needed"
        + (f" ({'; '.join(nearest)})" if nearest else "")
        + "; widen the band, lower k or add labels"
    )
    return Problem(item.id, str(item.source), "too_few_in_band", detail)


def _choice_item(
    item: Item, gold: str, picked: Sequence[tuple[str, float]], band: ResolvedBand, context: _Context
) -> Item:
    """One DR item from a checked source item, its gold spelling and its distractors."""
    suite_name = context.suite or item.suite
    task = f"{item.task}{TASK_SUFFIX}"
    new_id = Item.make_id(suite_name, task, item.local_id)
    texts = sorted(
        [gold, *(label for label, _ in picked)], key=lambda text: option_order_key(context.seed, new_id, text)
    )
    options = tuple(zip(LETTERS, texts, strict=False))
    meta: Mapping[str, Any] = {
        "source_item_id": item.id,
        "gold_label": gold,
        "encoder": context.encoder_name,
        "band": band.record(),
        "label_space_size": context.space_size,
        "k": context.k,
        "seed": context.seed,
        "distractors": [{"label": label, "similarity": sim} for label, sim in picked],
    }
    return Item(
        id=new_id,
        suite=suite_name,
        track=item.track,
        task=task,
        gold_type="single_choice",
        gold=LETTERS[texts.index(gold)],
        source=item.source,
        options=options,
        domain=item.domain,
        meta=meta,
        **dr_question(item),
    )
