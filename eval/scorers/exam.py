"""Exam scorers: single choice (accuracy), multi choice (exact set; option P/R/F1), cloze (char-F1)."""

from __future__ import annotations

from eval.items import Item
from eval.linglan import char_f1, multi_choice_score
from eval.scorers.answer_parsing import clean_answer, fold, parse_choice, parse_cloze
from eval.scorers.registry import deterministic_score, register
from eval.scores import PASS_THRESHOLD, Score


@register("single_choice")
def score_single_choice(item: Item, answer: str) -> Score:
    """Accuracy: 1 when the one option named is the gold label; naming several is ``ambiguous`` → 0."""
    text, notes = clean_answer(answer)
    parsed = parse_choice(text, item.options or (), multi=False)
    value = float(parsed.value == item.gold)
    extra = {"ambiguous": True, "candidates": list(parsed.candidates)} if parsed.ambiguous else {}
    return deterministic_score(
        value, parsed.value, (*notes, *parsed.notes), passed=bool(value), metrics={"accuracy": value}, **extra
    )


@register("multi_choice")
def score_multi_choice(item: Item, answer: str) -> Score:
    """value = exact set match (0/1); metrics add option-level precision, recall and F1."""
    text, notes = clean_answer(answer)
    parsed = parse_choice(text, item.options or (), multi=True)
    chosen = list(parsed.value or ())
    metrics = multi_choice_score(chosen, list(item.gold))
    return deterministic_score(
        metrics["exact"], chosen, (*notes, *parsed.notes), passed=metrics["exact"] == 1.0, metrics=metrics
    )


@register("cloze")
def score_cloze(item: Item, answer: str) -> Score:
    """value = best char-F1 between a parsed filler and any acceptable filler (both NFKC-folded);
    passed = value ≥ PASS_THRESHOLD."""
    text, notes = clean_answer(answer)
    question = item.question if item.question is not None else item.chat_messages()[-1]["content"]
    parsed = parse_cloze(text, question)
    fillers = [item.gold] if isinstance(item.gold, str) else list(item.gold)
    best, best_pair = 0.0, (None, None)
    for candidate in parsed.value:
        for filler in fillers:
            score = char_f1(candidate, fold(filler).strip())
            if score > best:
                best, best_pair = score, (candidate, filler)
    return deterministic_score(
        best, best_pair[0], (*notes, *parsed.notes), passed=best >= PASS_THRESHOLD, metrics={"char_f1": best},
        candidates=list(parsed.value), matched_filler=best_pair[1],
    )  # fmt: skip
