"""Reading a model's answer: clean it, find the final answer in it, and pull out choices or labels.

Model output is Chinese or English, with full-width characters, markdown, ``<think>`` blocks and
reasoning before the answer. Every parser here works on :func:`clean_answer`'s text (NFKC-folded,
so ``Ａ``→``A`` and ``：``→``:``; markdown emphasis, headings and code fences dropped; reasoning
blocks removed) and returns a :class:`Parsed`: the prediction plus notes saying how it was found,
so a reader of ``scores.jsonl`` can audit every score.

The last explicit answer wins: ``答案：C`` / ``Answer: C`` / ``选C`` / ``\\boxed{C}``; explicit
markers are rewritten to ``Answer:`` and read with :func:`eval.final_answer`. Without a marker the
parsers fall back to the last non-blank line, then to the whole answer, and say so in the notes.
Entity, dose and CHIP parsing live in ``tcm_parsing``; routing and tool calls in
``orchestration_parsing``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from eval.metrics.tcm.linglan import char_f1
from eval.metrics.text.parsing import final_answer


@dataclass(frozen=True)
class Parsed:
    """A parsed prediction (None when nothing usable was found) and how it was found."""

    value: Any
    notes: tuple[str, ...] = ()
    ambiguous: bool = False
    candidates: tuple[str, ...] = field(default=())


def fold(text: str) -> str:
    """NFKC: full-width letters, digits and punctuation to their ASCII forms (``：``→``:``, ``～``→``~``)."""
    return unicodedata.normalize("NFKC", text)


_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"<think(?:ing)?>", re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
_FENCE_LINE = re.compile(r"^\s*```[\w-]*\s*$", re.MULTILINE)
_HEADING = re.compile(r"^\s{0,3}(?:#{1,6}|>)\s*", re.MULTILINE)
_EMPHASIS = re.compile(r"\*\*|__|~~|`")


def strip_reasoning(text: str) -> tuple[str, tuple[str, ...]]:
    """The answer without ``<think>`` reasoning, and notes; nothing else is changed.

    ``<think>…</think>`` blocks are dropped; text before a lone ``</think>`` is reasoning (the
    template opened the block); an unclosed ``<think>`` means the model never left its reasoning,
    so the text is kept (an answer may still be named inside) and the fact noted.
    """
    notes: list[str] = []
    if _THINK_BLOCK.search(text):
        text = _THINK_BLOCK.sub("\n", text)
        notes.append("dropped <think> reasoning")
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
        notes.append("kept only the text after </think>")
    if _THINK_OPEN.search(text):
        text = _THINK_OPEN.sub("\n", text)
        notes.append("unclosed <think>: the answer may be reasoning only")
    return text, tuple(notes)


def clean_answer(text: str) -> tuple[str, tuple[str, ...]]:
    """The answer with reasoning removed (:func:`strip_reasoning`), NFKC-folded and markdown-free
    (emphasis, headings, quotes, code-fence lines); ``\\boxed{X}`` becomes an ``Answer: X`` line."""
    text, notes = strip_reasoning(text)
    text = fold(text)
    text = _BOXED.sub(lambda m: f"\nAnswer: {m.group(1)}\n", text)
    text = _FENCE_LINE.sub("", text)
    text = _HEADING.sub("", text)
    text = _EMPHASIS.sub("", text)
    return text.strip(), notes


# Explicit answer markers (on folded text). "答案" needs 是/为/: after it so that "答案可能在A和C之间"
# in reasoning is not read as an answer.
_ANSWER_MARKER = re.compile(
    r"(?:(?:最终|正确|参考)?答案\s*(?:应该|应当|应)?\s*(?:是|为)?\s*:"
    r"|(?:最终|正确)?答案\s*(?:应该|应当|应)?\s*(?:是|为)"
    r"|[【\[]\s*(?:最终|正确|参考)?答案\s*[】\]]\s*:?"
    r"|(?m:^\s*答\s*:)"
    r"|正确选项\s*(?:是|为|:)"
    r"|(?<![A-Za-z])(?:the\s+)?(?:final\s+|correct\s+)?answer\s*(?:is\s*:?|:)"
    r"|(?<![A-Za-z])(?:the\s+)?correct\s+(?:options?|choices?)\s*(?:is|are|:))",
    re.IGNORECASE,
)


def explicit_answer(text: str) -> str | None:
    """The text after the last explicit answer marker (``答案：``, ``Answer:``, ``答：``…), or None.

    The rest of the marker's line when it holds anything; otherwise everything after the marker
    (``答案：`` followed by a list on the next lines).
    """
    if not _ANSWER_MARKER.search(text):
        return None
    marked = _ANSWER_MARKER.sub("Answer:", text)
    on_line = final_answer(marked).strip(" :")
    if on_line:
        return on_line
    rest = marked[marked.rfind("Answer:") + len("Answer:") :].strip()
    return rest


def after_last_marker(text: str) -> str | None:
    """Everything after the last explicit answer marker (for multi-line answers), or None."""
    marks = list(_ANSWER_MARKER.finditer(text))
    return text[marks[-1].end() :].strip() if marks else None


def last_line(text: str) -> str:
    """The last non-blank line (``final_answer``'s fallback), stripped."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    return lines[-1] if lines else ""


def answer_segment(text: str, short: int = 40) -> tuple[str, str]:
    """Where the answer is: (segment, how) — the explicit answer, else the whole answer when it is
    at most ``short`` characters, else its last non-blank line."""
    explicit = explicit_answer(text)
    if explicit is not None:
        return explicit, "explicit answer marker"
    if len(text) <= short:
        return text, "whole answer (short)"
    return last_line(text), "no answer marker: last line"


# ---------------------------------------------------------------------------------------------
# Option letters (single and multi choice; routing by letter)

_CHOOSE = re.compile(r"(?<![不未勿别])(?:故|应|所以|因此|我|可)?选(?!项)(?:择)?\s*(?:为|是)?\s*:?\s*(?=[A-Za-z])")
_LIST_JOINERS = r"\s*(?:[、,;/&+]|和|及|与|and|or)?\s*"


def without_option_texts(segment: str, options: Sequence[tuple[str, str]]) -> str:
    """The segment with every option's text blanked out, so "ACE抑制剂" in a text hides no letters."""
    for _, text in sorted(options, key=lambda option: -len(option[1])):
        folded = fold(text).strip()
        if len(folded) >= 2:
            segment = segment.replace(folded, " ")
    return segment


def option_labels_in(segment: str, labels: Sequence[str]) -> list[str]:
    """Option labels named in the segment, in order of appearance (repeats removed).

    Single-letter labels are read from standalone uppercase runs made only of labels ("C", "AC",
    "A、C", "(B)"), so "ACEI" or "P2Y12" name nothing; an English article ("A patient") is skipped.
    A segment that is nothing but lowercase letters ("c", "a, c") is read as labels too.
    """
    label_set = set(labels)
    found: list[str] = []
    if all(len(label) == 1 for label in labels):
        bare = segment.strip(" .,:;()[]。")
        if re.fullmatch(rf"[a-z](?:{_LIST_JOINERS}[a-z])*", bare):
            segment = bare.upper()
        for match in re.finditer(r"(?<![A-Za-z])([A-Z]+)(?![A-Za-z])", segment):
            run = match.group(1)
            if run == "A" and re.match(r" (?!and\b|or\b)[a-z]", segment[match.end() : match.end() + 5]):
                continue  # "A patient …", but not "A and B"
            if set(run) <= label_set and len(set(run)) == len(run):
                found.extend(letter for letter in run if letter not in found)
        return found
    pattern = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    for match in re.finditer(rf"(?<![A-Za-z0-9])({pattern})(?![A-Za-z0-9])", segment):
        if match.group(1) not in found:
            found.append(match.group(1))
    return found


def option_texts_in(segment: str, options: Sequence[tuple[str, str]]) -> list[str]:
    """Labels whose option text appears in the segment; a text inside a longer found text is dropped."""
    hits = [
        (label, fold(text).strip()) for label, text in options if fold(text).strip() and fold(text).strip() in segment
    ]
    return [label for label, text in hits if not any(text != other and text in other for _, other in hits)]


def _explicit_choice_segments(text: str) -> list[tuple[int, str]]:
    """(position, segment) of every explicit answer: ``答案：…`` / ``Answer: …`` lines and ``选C``."""
    segments = []
    for match in _ANSWER_MARKER.finditer(text):
        rest = text[match.end() :]
        line = rest.split("\n", 1)[0].strip(" :")
        if not line:
            line = rest.strip().split("\n", 1)[0] if rest.strip() else ""
        segments.append((match.start(), line))
    for match in _CHOOSE.finditer(text):
        letters = re.match(rf"[A-Za-z](?:{_LIST_JOINERS}[A-Za-z](?![a-z]))*[^,.。;!?\n]*", text[match.end() :])
        if letters:
            segments.append((match.start(), letters.group(0)))
    return sorted(segments)


def without_echoed_option_list(text: str, options: Sequence[tuple[str, str]]) -> tuple[str, bool]:
    """The answer without the option list, when it repeats the whole list (a line ``A. text`` for
    every option), and whether it did.

    Repeating the question's options chooses nothing, yet its last line (``D. 依那普利``) reads like
    an answer: a small model that echoed the list scored whatever option came last. One option
    line alone ("D. 依那普利") is a real answer and is kept; only a complete list is dropped.
    """
    if len(options) < 2 or text.count("\n") + 1 < len(options):  # each option needs a line of its own
        return text, False
    wanted = {(fold(label), _sentence_body(fold(body))) for label, body in options}
    lines = text.split("\n")
    echoed: set[int] = set()
    found: set[tuple[str, str]] = set()
    for index, line in enumerate(lines):
        match = _OPTION_LINE.fullmatch(fold(line).strip())
        key = (match.group(1), _sentence_body(match.group(2))) if match else None
        if key in wanted:
            echoed.add(index)
            found.add(key)
    if found != wanted:
        return text, False
    return "\n".join(line for i, line in enumerate(lines) if i not in echoed), True


# "A. text", "(B) text", "C、text", "D: text" — one pattern for every option list (compiled once).
_OPTION_LINE = re.compile(r"\(?([^\s.、:()]+)\)?\s*[.、:)]\s*(.*)")


def _sentence_body(text: str) -> str:
    """An option text as compared: stripped, without the full stop that may end it."""
    return text.strip().rstrip(".。").strip()


def parse_choice(text: str, options: Sequence[tuple[str, str]], multi: bool) -> Parsed:
    """The chosen option label (single) or labels (multi, a sorted tuple) in a cleaned answer.

    A repeated option list is left out first (:func:`without_echoed_option_list`). Then, in order:
    the last explicit answer (``答案：C``, ``Answer: A, C``, ``选C``) → the last line → the whole
    answer; at each step option texts are blanked first, and when no label is named the
    option texts themselves are matched. Single choice naming several labels is ``ambiguous``
    (value None), as is a multi-choice answer with no explicit marker spread over a long text.
    """
    labels = [label for label, _ in options]
    notes: list[str] = []
    text, echoed = without_echoed_option_list(text, options)
    if echoed:
        notes.append("the option list repeated in the answer was left out")
    explicit = _explicit_choice_segments(text)
    chosen: list[str] = []
    for _, segment in reversed(explicit):  # the last explicit answer that names an option wins
        chosen = option_labels_in(without_option_texts(segment, options), labels) or option_texts_in(segment, options)
        if chosen:
            how = "last explicit answer"
            break
    else:
        how = "no answer marker: last line" if not explicit else "explicit answer names no option: last line"
        chosen = option_labels_in(without_option_texts(last_line(text), options), labels)
    if not chosen and not explicit:
        whole = option_labels_in(without_option_texts(text, options), labels)
        if whole and (not multi or len(text) <= 40 or len(whole) == 1):
            chosen, how = whole, "no answer marker: labels named anywhere in the answer"
        elif whole:
            notes.append(f"labels {whole} named in a long answer without an answer marker: not guessed")
    if not chosen:
        by_text = option_texts_in(last_line(text), options) or ([] if explicit else option_texts_in(text, options))
        if by_text:
            chosen, how = by_text, "matched option text (no label named)"
    notes.insert(0, how)
    if not chosen:
        return Parsed(None, (*notes, "no option found"))
    if multi:
        return Parsed(tuple(sorted(chosen, key=labels.index)), tuple(notes))
    if len(chosen) > 1:
        return Parsed(
            None, (*notes, f"ambiguous: names several options {chosen}"), ambiguous=True, candidates=tuple(chosen)
        )
    return Parsed(chosen[0], tuple(notes))


# ---------------------------------------------------------------------------------------------
# Open labels, cloze fillers, classification labels

# 和 splits "A证和B证" but not the TCM term 不和 ("肝胃不和证"); a split leaving a 1-character piece is undone.
_LABEL_SPLIT = re.compile(r"[、,;\n]|(?<!不)和")
_LABEL_MARKER = re.compile(r"(?:证型|辨证|证候|诊断|结论)(?:名称|结果)?\s*(?:应|可)?\s*(?:为|是|属于?|:)\s*:?")
# A piece starting with one of these is explanation or treatment, not a label: it and what follows are dropped.
_CLAUSE_START = re.compile(r"^\s*(?:治|宜|故|因|方[用选]|建议|可[用选]|所以|因此|分析|说明|理由|解释|依据|病机)")
_LEADING_TAG = re.compile(r"^(?:[-*•]|\d+[.)、]|\(\d+\))\s*|^[^:\s]{1,8}:\s*")
_EDGE = " \t.,;:!?。、\"'“”‘’()[]《》【】"


def split_labels(segment: str) -> list[str]:
    """Labels in a segment: split on 、，,；;和 and newlines; list bullets, "名称：" tags and edge
    punctuation stripped; 证/型 are kept (DTR-F1 tolerates them, the methodology does not strip)."""
    pieces: list[str] = []
    for raw in _LABEL_SPLIT.split(segment):
        if pieces and _CLAUSE_START.match(raw):
            break
        piece = _LEADING_TAG.sub("", raw.strip()).strip(_EDGE)
        piece = piece.strip(_EDGE)
        if not piece:
            continue
        if pieces and len(piece) == 1:
            pieces[-1] += piece  # "…不和" + "证" was never a real split
            continue
        pieces.append(piece)
    return pieces


def _first_sentence(segment: str) -> str:
    """The segment up to its first 。 (what follows is explanation: "X证。治宜…，与Y证不同")."""
    return segment.split("。", 1)[0].strip() or segment.strip()


def parse_open_labels(text: str) -> Parsed:
    """Open labels (e.g. syndrome names): after the last ``答案/证型/辨证/诊断 为:`` marker, else
    the whole short answer, else its last line; then :func:`split_labels`."""
    label_marks = list(_LABEL_MARKER.finditer(text))
    explicit = explicit_answer(text)
    if label_marks and (explicit is None or text.rfind(explicit) < label_marks[-1].start()):
        rest = text[label_marks[-1].end() :]
        segment = rest.split("\n", 1)[0].strip() or rest.strip()
        how = "after the last 证型/辨证/诊断 marker"
    else:
        segment, how = answer_segment(text)
        lines = [line.strip() for line in text.split("\n") if line.strip()]
        if how.endswith("last line") and len(lines[0]) <= 20 < len(lines[-1]):
            segment, how = lines[0], "no answer marker: short first line before a long explanation"
    labels = split_labels(_first_sentence(segment))
    return Parsed(tuple(labels), (how,) if labels else (how, "no label found"))


def parse_cloze(text: str, question: str) -> Parsed:
    """Candidate fillers for a blank: the explicit answer or short answer, and, when the model
    restated the sentence, the text between the blank's neighbours in the question.

    The value is a tuple of candidates (best char-F1 wins in the scorer); the first is the segment.
    """
    segment, how = answer_segment(text)
    segment = segment.strip(_EDGE)
    candidates = [segment] if segment else []
    notes = [how]
    filled = _fill_from_question(segment, question) or _fill_from_question(text, question)
    if filled and filled not in candidates:
        candidates.append(filled)
        notes.append("also read the filler from the question's sentence restated in the answer")
    return Parsed(tuple(candidates), tuple(notes) if candidates else (*notes, "no filler found"))


_BLANK = re.compile(r"_{2,}|\(\s*\)|（\s*）")


def _fill_from_question(text: str, question: str) -> str | None:
    """What stands where the blank was, when the answer restates the question's sentence."""
    sentence, answer = ("".join(fold(s).split()) for s in (question, text))
    blank = _BLANK.search(sentence)
    if not blank:
        return None
    left, right = sentence[: blank.start()], sentence[blank.end() :]
    attempts = [(left[-width:], right[:width]) for width in (6, 4, 2)]
    attempts += [("", right[:width]) for width in (6, 4, 2)] + [(left[-width:], "") for width in (6, 4)]
    for before, after in attempts:
        if not before and not after:
            continue
        start = re.escape(before) if before else "^"
        end = re.escape(after) if after else "$"
        match = re.search(f"{start}(.{{1,30}}?){end}", answer)
        if match and match.group(1).strip(_EDGE):
            return match.group(1).strip(_EDGE)
    return None


# A label right after one of these (in the same clause) is ruled out, not chosen: "排除风热犯表证".
_RULED_OUT = re.compile(r"(?:排除|除外|不是|并非|而非|不属于?|不考虑|不像|不符合)[^,;:.!?。\n]{0,4}$")
# A label between 与/和 and 鉴别 in one clause ("需与X证、Y证鉴别") is a differential, not the answer.
_DIFFERENTIAL_BEFORE = re.compile(r"(?:与|和|同)[^,;:.!?。\n]{0,30}$")
_DIFFERENTIAL_AFTER = re.compile(r"^[^,;:.!?。\n]{0,30}?(?:相?鉴别|区别|区分)")


def labels_named(segment: str, labels: Sequence[str]) -> list[str]:
    """The labels the segment names as its answer, in order of first appearance.

    Only whole mentions count: a label inside a longer label's mention ("脾虚证" within "脾虚湿盛证")
    is not named. Mentions ruled out ("排除X", "不是X", "而非X") or set as a differential ("与X鉴别")
    are not named either.
    """
    mentions = []
    for folded, original in {fold(label): label for label in labels}.items():
        start = segment.find(folded)
        while start >= 0:
            mentions.append((start, start + len(folded), original))
            start = segment.find(folded, start + 1)
    named: list[str] = []
    for start, end, label in sorted(mentions):
        inside_longer = any(s <= start and end <= e and (s, e) != (start, end) for s, e, _ in mentions)
        before, after = segment[:start], segment[end:]
        if inside_longer or _RULED_OUT.search(before):
            continue
        if _DIFFERENTIAL_BEFORE.search(before) and _DIFFERENTIAL_AFTER.match(after):
            continue
        if label not in named:
            named.append(label)
    return named


def _classification_segments(text: str) -> tuple[list[str], str]:
    """Where a classification answer is: the last explicit answer (``答案：X``); else every segment
    after a 证型/辨证/诊断 marker (all of them, so an enumeration of "证型名称：X" lines is seen as
    one); each up to its first 。; else the whole answer up to 200 characters; else its last line."""
    explicit = explicit_answer(text)
    if explicit is not None:
        return [_first_sentence(explicit)], "explicit answer marker"
    marked = [_first_sentence(text[m.end() :].split("\n", 1)[0]) for m in _LABEL_MARKER.finditer(text)]
    if any(marked):
        return [segment for segment in marked if segment], "after the 证型/辨证/诊断 markers"
    segment, how = answer_segment(text, short=200)
    return [segment], how


def parse_classification(text: str, labels: Sequence[str], tau: float = 0.7) -> Parsed:
    """One label of a known label set, or None (scored wrong).

    The answer must commit to one label. In the answer's segments (:func:`_classification_segments`),
    then in the whole answer when the segments name none, the labels named
    (:func:`labels_named`) decide: exactly one is the prediction; several are an enumeration or a
    hedge, ``ambiguous`` with no prediction (listing every label cannot win). When no label is
    named, the label with the best char-F1 ≥ tau against a piece of the segment is taken.
    """
    segments, how = _classification_segments(text)
    for where, haystacks in ((how, segments), ("whole answer", [text])):
        named: list[str] = []
        for haystack in haystacks:
            named.extend(label for label in labels_named(haystack, labels) if label not in named)
        if len(named) == 1:
            return Parsed(named[0], (where, "exact label match"))
        if named:
            return Parsed(
                None,
                (where, f"ambiguous: names several labels {named}, not one answer"),
                ambiguous=True,
                candidates=tuple(named),
            )
    segment = segments[-1]
    folded_labels = {fold(label): label for label in labels}
    pieces = split_labels(segment) or [segment]
    best_score, best_label, best_piece = 0.0, None, None
    for piece in pieces:
        for folded, original in folded_labels.items():
            score = char_f1(piece, folded)
            if score > best_score:
                best_score, best_label, best_piece = score, original, piece
    if best_label is not None and best_score >= tau:
        return Parsed(best_label, (how, f"char-F1 {best_score:.2f} between {best_piece!r} and the label"))
    return Parsed(None, (how, f"no label matched (best char-F1 {best_score:.2f} < {tau})"))
