"""extract_json on hostile text: one pass finds every balanced span, the decoder's work is budgeted,
and the answer is the catalogue's (item 17) per-start rule wherever the budget is not reached."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from eval.metrics.text.parsing import _balanced_span_ends, extract_json


def _catalogue_span_end(text, start):
    """Item 17 read literally: scan from this ``{``, braces in strings ignored, until the count is 0."""
    depth, in_string, escaped = 0, False, False
    for position in range(start, len(text)):
        char = text[position]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return position + 1
    return None


def _catalogue_extract_json(text):
    for start, char in enumerate(text):
        if char != "{":
            continue
        end = _catalogue_span_end(text, start)
        if end is None:
            continue
        try:
            value = json.loads(text[start:end])
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            return value
    return None


class TestUnmatchedBraces:
    def test_twenty_thousand_open_braces(self):
        assert extract_json("{" * 20_000) is None

    def test_open_keys_never_closed(self):
        assert extract_json('{"a": ' * 5_000) is None

    def test_object_after_twenty_thousand_open_braces(self):
        assert extract_json("{" * 20_000 + '{"ok": 1}') == {"ok": 1}
        assert extract_json('{"a": ' * 5_000 + ' {"ok": 1}') == {"ok": 1}

    def test_no_span_for_unmatched_starts(self):
        assert _balanced_span_ends("{" * 20_000) == {}
        assert _balanced_span_ends("{{}") == {1: 3}


class TestDecodeBudget:
    def test_deeply_nested_almost_objects_give_none(self):
        # 5,000 spans, each an object nested 5,000 deep that never holds a value: no start loads,
        # and the budget (16 x 35,000 characters) stops the attempts long before the last one.
        assert extract_json('{"a": ' * 5_000 + "}" * 5_000) is None

    def test_spent_budget_gives_none_even_before_a_loadable_span(self):
        # The outer starts fail (nested past the decoder's recursion limit), each charged its whole
        # span, about the whole 35,000-character text; after 16 of them the budget is spent, so the
        # starts deep enough to load (about the last thousand) are never tried.
        assert extract_json('{"a": ' * 5_000 + '{"ok": 1}' + "}" * 5_000) is None

    def test_a_few_nested_failures_stay_within_budget(self):
        # Three failed starts (each missing a value), then the innermost object loads.
        text = '{"a": {"b": {"c": {"d": 1}, "x": }, "y": }, "z": }'
        assert extract_json(text) == {"d": 1}


class TestStringViews:
    def test_brace_inside_an_earlier_string_starts_outside_one(self):
        # From 0 the "{" at 7 is string text; scanned from 7 it opens {"k": 1}, which loads.
        assert extract_json('{"s": "{"k": 1}') == {"k": 1}
        assert _balanced_span_ends('{"s": "{"k": 1}') == {7: 15}

    def test_escaped_quote_brings_two_views_together(self):
        # From 0 the "{" at 7 is string text and \" an escaped quote; from 7 the backslash is plain
        # text and " opens a string. Both views are then inside a string and close at the last "}".
        text = '{"a": "{\\"}"}'
        assert _balanced_span_ends(text) == {0: 13, 7: 13}
        assert extract_json(text) == {"a": '{"}'}


_PIECES = st.sampled_from(["{", "}", '"', "\\", "a", ":", "1", ",", " ", "[", "]", '"k": ', '{"a": 1}', '\\"'])


@settings(max_examples=2000)
@given(st.lists(_PIECES, max_size=40).map("".join))
def test_same_spans_and_answer_as_the_catalogue_rule(text):
    expected_ends = {
        start: end
        for start, char in enumerate(text)
        if char == "{"
        for end in [_catalogue_span_end(text, start)]
        if end is not None
    }
    assert _balanced_span_ends(text) == expected_ends
    assert extract_json(text) == _catalogue_extract_json(text)
