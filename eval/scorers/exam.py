"""Exam scorers: single choice (accuracy), multi choice (exact set; option P/R/F1), cloze (char-F1),
true/false (accuracy)."""

from __future__ import annotations

import re

from eval.items import Item
from eval.items.scores import PASS_THRESHOLD, Score
from eval.metrics.tcm.linglan import char_f1, multi_choice_score
from eval.scorers.answer_parsing import (
    Parsed,
    answer_segment,
    clean_answer,
    fold,
    parse_choice,
    parse_cloze,
)
from eval.scorers.registry import deterministic_score, register


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
        best,
        best_pair[0],
        (*notes, *parsed.notes),
        passed=best >= PASS_THRESHOLD,
        metrics={"char_f1": best},
        candidates=list(parsed.value),
        matched_filler=best_pair[1],
    )


# Verdict words on folded text, longest first so that "不正确" is never read as "正确". A word opening
# the answer counts when a non-word character (or 的) follows it, so "对于…" is not "对". Inside a
# sentence only unmistakable words count: not 是/否/对/错/T/F alone, which are common in any text,
# nor 正确 in "是否正确" or "正确答案".
_VERDICTS = {
    "不正确": "false",
    "不对": "false",
    "不是": "false",
    "错误": "false",
    "错的": "false",
    "错": "false",
    "否": "false",
    "false": "false",
    "no": "false",
    "f": "false",
    "×": "false",
    "✗": "false",
    "✘": "false",
    "正确": "true",
    "是的": "true",
    "对": "true",
    "是": "true",
    "true": "true",
    "yes": "true",
    "t": "true",
    "√": "true",
    "✓": "true",
    "✔": "true",
}
_VERDICT_WORDS = "|".join(re.escape(word) for word in sorted(_VERDICTS, key=len, reverse=True))
_LEADING = re.compile(rf"^\W*({_VERDICT_WORDS})(?=$|\W|的)", re.IGNORECASE)
_INSIDE = re.compile(
    r"不正确|不对|错误|(?<!不)错的|(?<!否)正确(?!答案|选项)"  # 不错的 is praise, 是否正确 a question
    r"|(?<![A-Za-z])(?:true|false)(?![A-Za-z])|[√×✓✗✔✘]",
    re.IGNORECASE,
)


def parse_true_false(text: str) -> Parsed:
    """The verdict ("true" / "false") of a cleaned answer: in the answer segment (the explicit answer,
    a short whole answer or the last line), then in the whole answer — a verdict word opening it,
    else the unmistakable verdict words inside it; naming both verdicts is ``ambiguous``."""
    segment, how = answer_segment(text)
    for part, where in ((segment, how), (text, "whole answer")) if segment != text else ((text, how),):
        leading = _LEADING.match(part)
        if leading:
            return Parsed(_VERDICTS[leading.group(1).lower()], (where, "verdict word opens it"))
        found = [_VERDICTS[word.lower()] for word in _INSIDE.findall(part)]
        if len(set(found)) == 1:
            return Parsed(found[0], (where, "verdict word inside it"))
        if found:
            return Parsed(None, (where, "ambiguous: names both verdicts"), ambiguous=True, candidates=("true", "false"))
    return Parsed(None, (how, "no true/false verdict found"))


@register("true_false")
def score_true_false(item: Item, answer: str) -> Score:
    """Accuracy: 1 when the verdict read (对/错, 正确/错误, 是/否, true/false, T/F, √/×) is the gold;
    an answer naming both verdicts is ``ambiguous`` → 0."""
    text, notes = clean_answer(answer)
    parsed = parse_true_false(text)
    value = float(parsed.value == item.gold)
    extra = {"ambiguous": True} if parsed.ambiguous else {}
    return deterministic_score(
        value, parsed.value, (*notes, *parsed.notes), passed=bool(value), metrics={"accuracy": value}, **extra
    )
