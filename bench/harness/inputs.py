"""Seeded synthetic inputs for the metrics bench: every generator draws from seed 0.

Sizes come from ``FULL`` (the sizes in bench/README.md's metrics_bench table) or ``QUICK`` (each shrunk
10-100x for a smoke run).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Sizes:
    dtr_instances: int
    dtr_labels: int  # predicted and gold labels per instance
    macro_predictions: int
    macro_recipe_subset: int  # the recipe is timed here first; the estimate decides a full run
    hard_items: int
    hard_models: int
    hard_top_k: int
    elo_matches: int
    elo_models: int
    rouge_pairs: int
    rouge_tokens: int
    rouge_baseline_pairs: int  # the O(n·m) DP runs on this prefix and is extrapolated


FULL = Sizes(10_000, 10, 1_000_000, 100_000, 25_624, 50, 400, 1_000_000, 50, 10_000, 500, 100)
QUICK = Sizes(500, 10, 20_000, 2_000, 1_000, 50, 40, 20_000, 50, 200, 500, 5)


TCM_ALPHABET = "".join(
    dict.fromkeys(  # ~60 characters of TCM syndrome vocabulary, duplicates dropped
        "气血阴阳虚实寒热肝脾肾心肺胃胆郁瘀痰湿火风燥证型不足亢盛"
        "表里营卫津液精神经络滞结闭脱逆陷上中下焦膀胱肠外感内伤毒暑饮水亏衰"
    )
)
ORGANS = ["肝", "心", "脾", "肺", "肾", "胃", "胆", "大肠", "小肠", "膀胱", "三焦", "心包"]
PATTERNS = ["气虚", "血虚", "阴虚", "阳虚", "气滞", "血瘀", "痰湿", "湿热", "寒凝", "火旺", "风燥", "津亏", "郁结"]
SYLLABLES = [
    "ca",
    "ro",
    "di",
    "ne",
    "pa",
    "thy",
    "ma",
    "lo",
    "gi",
    "sis",
    "ar",
    "te",
    "ri",
    "al",
    "ve",
    "no",
    "us",
    "he",
    "pu",
    "tic",
    "Car",
    "Neu",
    "Gas",
    "tro",
    "en",
    "cy",
    "ph",
    "lum",
    "ox",
    "in",
]


def zipf_weights(count: int, exponent: float) -> np.ndarray:
    weights = 1.0 / np.arange(1, count + 1) ** exponent
    return weights / weights.sum()


def make_dtr_instances(sizes: Sizes) -> list[tuple[list[str], list[str]]]:
    """Gold: random 2-6 char labels. Predictions: ~35% copies of a gold label (repeats allowed),
    ~30% one-edit variants (substitute, drop or add a char), the rest unrelated labels; shuffled."""
    rnd = random.Random(0)

    def label() -> str:
        return "".join(rnd.choices(TCM_ALPHABET, k=rnd.randint(2, 6)))

    def variant(text: str) -> str:
        at, kind = rnd.randrange(len(text)), rnd.randrange(3)
        if kind == 0:
            return text[:at] + rnd.choice(TCM_ALPHABET) + text[at + 1 :]
        if kind == 1 and len(text) > 2:
            return text[:at] + text[at + 1 :]
        return text + rnd.choice("证型虚")

    instances = []
    for _ in range(sizes.dtr_instances):
        gold = [label() for _ in range(sizes.dtr_labels)]
        predicted = []
        for _ in range(sizes.dtr_labels):
            draw = rnd.random()
            predicted.append(rnd.choice(gold) if draw < 0.35 else variant(rnd.choice(gold)) if draw < 0.65 else label())
        rnd.shuffle(predicted)
        instances.append((predicted, gold))
    return instances


def make_syndrome_predictions(sizes: Sizes) -> tuple[list[str], list[str], list[str]]:
    """148 syndrome names with Zipf(1.1) support; each prediction is right with p = 0.4, otherwise a
    draw from the class prior (so it is sometimes right by chance). Returns (labels, preds, golds)."""
    rng = np.random.default_rng(0)
    labels = sorted(organ + pattern + "证" for organ in ORGANS for pattern in PATTERNS)[:148]
    prior = zipf_weights(len(labels), 1.1)[rng.permutation(len(labels))]
    gold_codes = rng.choice(len(labels), size=sizes.macro_predictions, p=prior)
    guesses = rng.choice(len(labels), size=sizes.macro_predictions, p=prior)
    pred_codes = np.where(rng.random(sizes.macro_predictions) < 0.4, gold_codes, guesses)
    return labels, [labels[c] for c in pred_codes.tolist()], [labels[c] for c in gold_codes.tolist()]


def make_correctness(sizes: Sizes) -> tuple[list[str], np.ndarray]:
    """Binary items × models matrix from a Rasch model: P(correct) = sigmoid(ability_m − hardness_i)."""
    rng = np.random.default_rng(0)
    ability = rng.normal(0.0, 1.0, sizes.hard_models)
    hardness = rng.normal(0.0, 1.5, sizes.hard_items)
    p_correct = 1.0 / (1.0 + np.exp(hardness[:, None] - ability[None, :]))
    matrix = (rng.random(p_correct.shape) < p_correct).astype(float)
    return [f"tcm-{i:05d}" for i in range(sizes.hard_items)], matrix


def make_matches(sizes: Sizes) -> list[list[Any]]:
    """[a, b, score_a] among models whose true strengths spread ~200 Elo; ~10% ties."""
    rng = np.random.default_rng(0)
    names = [f"model-{i:02d}" for i in range(sizes.elo_models)]
    strength = rng.normal(0.0, 200.0, sizes.elo_models)
    a = rng.integers(0, sizes.elo_models, sizes.elo_matches)
    b = (a + rng.integers(1, sizes.elo_models, sizes.elo_matches)) % sizes.elo_models  # never a == b
    p_a = 1.0 / (1.0 + 10.0 ** ((strength[b] - strength[a]) / 400.0))
    draw = rng.random(sizes.elo_matches)
    score = np.where(draw < 0.1, 0.5, np.where(draw < 0.1 + 0.9 * p_a, 1.0, 0.0))
    return [[names[i], names[j], s] for i, j, s in zip(a.tolist(), b.tolist(), score.tolist(), strict=True)]


def make_text_pairs(sizes: Sizes) -> list[tuple[str, str]]:
    """(candidate, reference) texts of rouge_tokens words each, drawn independently from a
    2,000-word vocabulary with Zipf(1.07) frequencies (some capitalised, so lowercasing matters)."""
    rng = np.random.default_rng(0)
    vocabulary: dict[str, None] = {}
    while len(vocabulary) < 2000:
        vocabulary["".join(rng.choice(SYLLABLES, size=int(rng.integers(2, 5))))] = None
    words = list(vocabulary)
    codes = rng.choice(len(words), size=(sizes.rouge_pairs, 2, sizes.rouge_tokens), p=zipf_weights(len(words), 1.07))
    return [(" ".join([words[c] for c in cand]), " ".join([words[c] for c in ref])) for cand, ref in codes.tolist()]
