"""Decision recognition: distractor choice in the band, portable option order, problems, the TF-IDF
fallback, the embedding cache, the embeddings client (against a FAKE server), the CLI and its JSONL
round trip, embedding DTR-F1, and DR items from the TCM-SD sample in ../shared/data."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval.decision_recognition import (
    DR_INSTRUCTION,
    LETTERS,
    Band,
    build_choice_items,
    nearest_in_band,
    option_order_key,
)
from eval.encoders import cosine_matrix, tfidf_char_ngrams, tfidf_encoder_name
from eval.encoders.cache import EmbeddingCache, cached_encoder
from eval.items import Item, Source
from eval.loaders import load_items
from eval.loaders.formats.tcm_sd import INSTRUCTION as TCM_SD_INSTRUCTION
from eval.metrics.tcm.linglan import char_f1, dtr_f1, dtr_f1_embedding
from pool.decision_recognition import main as dr_main
from runners.embeddings import EmbeddingsClient, EmbeddingsError, embed_texts
from runners.retry import RetryPolicy
from tests.fakes import ThreadedFakes, server_error, status
from tests.fakes.embeddings_fake import FakeEmbeddingsServer, default_vector

REPO = Path(__file__).resolve().parents[2]
FAST = RetryPolicy(max_retries=1, backoff_base_s=0.01, backoff_max_s=0.02)
KEY_ENV = "MEDPOOL_TEST_EMBEDDINGS_KEY"


class StubEncoder:
    """Vectors whose cosines are set by hand: text → (group, cosine to that group's gold).

    Group g's gold lies on axis 2g; a label with cosine c to it is c·e_2g + √(1−c²)·e_2g+1, so its
    cosine with any other group's gold is 0. Unknown texts get a vector orthogonal to every gold.
    """

    def __init__(self, spec: dict[str, tuple[int, float]], groups: int = 4) -> None:
        self.spec, self.dim, self.calls = spec, 2 * groups + 1, []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        rows = np.zeros((len(texts), self.dim))
        for row, text in enumerate(texts):
            if text not in self.spec:
                rows[row, -1] = 1.0
                continue
            group, cosine = self.spec[text]
            rows[row, 2 * group] = cosine
            rows[row, 2 * group + 1] = math.sqrt(max(0.0, 1 - cosine * cosine))
        return rows


def item(local_id: str, gold, gold_type: str = "classification", **fields) -> Item:
    question = fields.pop("question", f"主诉：头晕。\n{TCM_SD_INSTRUCTION}")
    return Item(
        id=Item.make_id("t", "SD", local_id),
        suite="t",
        track="tcm",
        task="SD",
        gold_type=gold_type,
        gold=gold,
        source=Source("t.jsonl", int(local_id) if local_id.isdigit() else 1),
        question=question,
        **fields,
    )


# Group 0: gold 气虚血瘀证 with labels at hand-set cosines, a spelling duplicate and a near-copy.
SPEC = {
    "气虚血瘀证": (0, 1.0),
    "气虚血瘀证。": (0, 0.9),  # normalises to the gold: never a distractor, though inside the band
    "气虚血瘀": (0, 0.97),  # above the band (near-copy)
    "气滞血瘀证": (0, 0.9),
    "肝郁血瘀证": (0, 0.8),
    "气虚痰湿证": (0, 0.8),  # ties with 肝郁血瘀证: code-point order decides
    "气血两虚证": (0, 0.6),
    "瘀血阻络证": (0, 0.5),  # exactly on the lower edge: inside
    "痰湿蒙窍证": (0, 0.49),  # just below
}
LABELS = list(SPEC)
# The hand-set cosines above are absolute: these tests pin the absolute band (the default band,
# relative to the encoder, is tested in tests/eval/test_decision_recognition_defaults.py).
ABS = Band.cosines(0.5, 0.95)


def test_distractors_are_the_nearest_inside_the_band_ties_by_code_point() -> None:
    encode = StubEncoder(SPEC)
    items, problems = build_choice_items([item("1", "气虚血瘀证")], LABELS, encode, encoder_name="stub", k=4, band=ABS)
    assert problems == [] and len(encode.calls) == 1
    meta = items[0].meta
    picked = [(d["label"], d["similarity"]) for d in meta["distractors"]]
    assert sorted(["肝郁血瘀证", "气虚痰湿证"]) == ["气虚痰湿证", "肝郁血瘀证"]  # 气 U+6C14 < 肝 U+809D
    assert picked == [("气滞血瘀证", 0.9), ("气虚痰湿证", 0.8), ("肝郁血瘀证", 0.8)]
    assert all(0.5 <= sim <= 0.95 for _, sim in picked)
    assert meta["source_item_id"] == "t/SD/1" and meta["encoder"] == "stub"
    assert (
        meta["band"] == {"quantiles": None, "cosines": (0.5, 0.95), "label_pairs": 28} and meta["label_space_size"] == 8
    )
    texts = [text for _, text in items[0].options]
    assert "气虚血瘀证。" not in texts and "气虚血瘀" not in texts


def test_band_edges_are_inclusive_and_k_grows_into_them() -> None:
    items, _ = build_choice_items(
        [item("1", "气虚血瘀证")], LABELS, StubEncoder(SPEC), encoder_name="stub", k=6, band=ABS
    )
    assert [d["label"] for d in items[0].meta["distractors"]][-1] == "瘀血阻络证"  # cosine 0.5 == lo
    _, problems = build_choice_items(
        [item("1", "气虚血瘀证")], LABELS, StubEncoder(SPEC), encoder_name="stub", k=7, band=ABS
    )
    assert [p.kind for p in problems] == ["too_few_in_band"]
    assert "5 label(s)" in problems[0].detail and "0.490" in problems[0].detail and "0.970" in problems[0].detail


def test_nearest_in_band_is_pure_and_hand_checked() -> None:
    pairs = [("b", 0.7), ("a", 0.7), ("c", 0.96), ("d", 0.2), ("e", 0.95)]
    assert nearest_in_band(pairs, (0.5, 0.95), 2) == [("e", 0.95), ("a", 0.7)]
    assert nearest_in_band(pairs, (0.5, 0.95), 9) == [("e", 0.95), ("a", 0.7), ("b", 0.7)]


def test_gold_letter_names_the_gold_and_the_question_asks_for_a_letter() -> None:
    items, _ = build_choice_items([item("1", "气虚血瘀证")], LABELS, StubEncoder(SPEC), encoder_name="stub", band=ABS)
    dr = items[0]
    assert dr.gold_type == "single_choice" and dict(dr.options)[dr.gold] == "气虚血瘀证"
    assert [label for label, _ in dr.options] == list("ABCD")
    assert dr.id == "t/SD-DR/1" and dr.task == "SD-DR" and dr.track == "tcm" and dr.source == Source("t.jsonl", 1)
    assert dr.question == f"主诉：头晕。\n{DR_INSTRUCTION}" and TCM_SD_INSTRUCTION not in dr.question
    other, _ = build_choice_items(
        [item("1", "气虚血瘀证", question="何证？")], LABELS, StubEncoder(SPEC), encoder_name="s", band=ABS
    )
    assert other[0].question == f"何证？\n{DR_INSTRUCTION}"


def test_option_order_is_the_documented_sha256_sort_pinned() -> None:
    items, _ = build_choice_items(
        [item("1", "气虚血瘀证")], LABELS, StubEncoder(SPEC), encoder_name="stub", seed=0, band=ABS
    )
    texts = [text for _, text in items[0].options]
    assert texts == sorted(texts, key=lambda text: option_order_key(0, "t/SD-DR/1", text))
    assert option_order_key(0, "t/SD-DR/1", "气虚血瘀证").startswith(PINNED_KEY_PREFIX)
    assert items[0].options == PINNED_OPTIONS


# Computed outside Python (printf "0|t/SD-DR/1|<text>" | sha256sum): 00e902…, 1038be…, 761e5d…,
# 9ba6a1… in the order below; a change here reorders every DR suite already written.
PINNED_KEY_PREFIX = "1038be4f96ec"
PINNED_OPTIONS = (("A", "气滞血瘀证"), ("B", "气虚血瘀证"), ("C", "气虚痰湿证"), ("D", "肝郁血瘀证"))


def test_option_order_is_stable_across_runs_and_differs_across_seeds() -> None:
    sources = [item(str(i), "气虚血瘀证") for i in range(1, 13)]
    first, _ = build_choice_items(sources, LABELS, StubEncoder(SPEC), encoder_name="s", band=ABS)
    again, _ = build_choice_items(sources, LABELS, StubEncoder(SPEC), encoder_name="s", band=ABS)
    assert [i.to_record() for i in first] == [i.to_record() for i in again]
    reseeded, _ = build_choice_items(sources, LABELS, StubEncoder(SPEC), encoder_name="s", seed=1, band=ABS)
    assert [i.options for i in reseeded] != [i.options for i in first]
    assert len({i.gold for i in first}) > 1  # the gold is not always in one place


_PROCESS_SCRIPT = (
    "\n"
    "import json, sys\n"
    "from tests.eval.test_decision_recognition import ABS, SPEC, LABELS, StubEncoder, item\n"
    "from eval.decision_recognition import build_choice_items\n"
    'items, _ = build_choice_items([item(str(i), "气虚血瘀证") for i in range(1, 13)], LABELS, StubEncoder(SPEC), '
    'encoder_name="s", band=ABS)\n'
    "print(json.dumps([i.to_record() for i in items], ensure_ascii=False))\n"
)


def test_option_order_is_the_same_in_another_process_with_another_hash_seed() -> None:
    here, _ = build_choice_items(
        [item(str(i), "气虚血瘀证") for i in range(1, 13)], LABELS, StubEncoder(SPEC), encoder_name="s", band=ABS
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run(
        [sys.executable, "-c", _PROCESS_SCRIPT],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [i.to_record() for i in here]


def test_problems_are_reported_in_input_order_never_padded() -> None:
    items = [
        item("1", "气虚血瘀证"),
        item("2", "不在表中证"),  # joins the label space, but the stub puts it far from every label
        item("3", ["气虚血瘀证", "气滞血瘀证"], gold_type="open_label"),
        item("4", ["气虚血瘀证", " 气虚血瘀证"], gold_type="open_label"),  # one gold, spelt twice
        item("5", "B", gold_type="single_choice", options={"A": "甲", "B": "乙"}),
        item("6", "气虚血瘀证", scorable=False, skip_reason="gold disputed"),
        item("7", "痰湿蒙窍证"),  # its own group: no neighbour in the band
    ]
    spec = {**SPEC, "痰湿蒙窍证": (1, 1.0)}
    built, problems = build_choice_items(items, LABELS, StubEncoder(spec), encoder_name="stub", band=ABS)
    assert [i.id for i in built] == ["t/SD-DR/1", "t/SD-DR/4"]
    assert [(p.item_id, p.kind) for p in problems] == [
        ("t/SD/2", "too_few_in_band"),
        ("t/SD/3", "multi_gold"),
        ("t/SD/5", "not_convertible"),
        ("t/SD/6", "unscorable"),
        ("t/SD/7", "too_few_in_band"),
    ]
    assert str(problems[0]).startswith("t.jsonl:2: t/SD/2: too_few_in_band:")
    assert (
        built[0].meta["label_space_size"] == len(LABELS) - 1 + 1
    )  # 气虚血瘀证。 merges with the gold; 不在表中证 joins


def test_a_closed_label_list_reports_golds_outside_it() -> None:
    items = [item("1", "气虚血瘀证"), item("2", "不在表中证")]
    built, problems = build_choice_items(
        items, LABELS, StubEncoder(SPEC), encoder_name="stub", band=ABS, include_golds=False
    )
    assert [i.id for i in built] == ["t/SD-DR/1"] and [(p.item_id, p.kind) for p in problems] == [
        ("t/SD/2", "gold_not_in_labels")
    ]
    assert str(problems[0]).startswith("t.jsonl:2: t/SD/2: gold_not_in_labels: gold '不在表中证'")
    assert built[0].meta["label_space_size"] == len(LABELS) - 1
    with pytest.raises(ValueError, match="the label set is empty"):
        build_choice_items(items, [], StubEncoder(SPEC), encoder_name="stub", include_golds=False)


def test_a_merged_suite_name_that_collides_is_a_problem() -> None:
    a = item("1", "气虚血瘀证")
    b = Item(
        id="u/SD/1",
        suite="u",
        track="tcm",
        task="SD",
        gold_type="classification",
        gold="气虚血瘀证",
        source=Source("u.jsonl", 1),
        question="q",
    )
    built, problems = build_choice_items(
        [a, b], LABELS, StubEncoder(SPEC), encoder_name="stub", suite="merged", band=ABS
    )
    assert [i.id for i in built] == ["merged/SD-DR/1"] and [p.kind for p in problems] == ["duplicate_id"]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"k": 1}, "k must be >= 2"),
        ({"k": 27}, "at most 26"),
        ({"band": (0.5, 0.95)}, "band must be a Band"),
        ({"encoder_name": " "}, "encoder_name"),
    ],
)
def test_bad_options_are_refused_naming_them(kwargs, message) -> None:
    options = {"encoder_name": "stub", **kwargs}
    with pytest.raises((TypeError, ValueError), match=message):
        build_choice_items([item("1", "气虚血瘀证")], LABELS, StubEncoder(SPEC), **options)


def test_an_encoder_of_the_wrong_shape_is_named() -> None:
    with pytest.raises(ValueError, match="encoder 'bad' returned shape"):
        build_choice_items([item("1", "气虚血瘀证")], LABELS, lambda texts: np.zeros((1, 3)), encoder_name="bad")


@settings(max_examples=60, deadline=None)
@given(
    cosines=st.lists(st.floats(min_value=-1.0, max_value=1.0, allow_nan=False), min_size=3, max_size=12),
    k=st.integers(min_value=2, max_value=5),
    low=st.floats(min_value=-0.5, max_value=0.9),
    seed=st.integers(min_value=0, max_value=2**31),
)
def test_property_every_item_is_well_formed(cosines, k, low, seed) -> None:
    spec = {"金": (0, 1.0), **{f"证{i:02d}": (0, c) for i, c in enumerate(cosines)}}
    band = Band.cosines(low, 0.95)
    built, problems = build_choice_items(
        [item("1", "金")], list(spec), StubEncoder(spec), encoder_name="s", k=k, band=band, seed=seed
    )
    in_band = sum(low <= round(c, 6) <= 0.95 for c in cosines)
    assert len(built) == (in_band >= k - 1) and len(problems) == (in_band < k - 1)
    for dr in built:
        texts = [text for _, text in dr.options]
        assert len(texts) == k == len(set(texts)) and dict(dr.options)[dr.gold] == "金"
        sims = [d["similarity"] for d in dr.meta["distractors"]]
        assert all(low <= s <= 0.95 for s in sims) and sims == sorted(sims, reverse=True)
        inside = sorted((round(c, 6) for c in cosines if low <= round(c, 6) <= 0.95), reverse=True)
        assert min(sims) >= inside[k - 2]  # no nearer label in the band was left out


# --- encoders ---------------------------------------------------------------------------------


def test_tfidf_hand_computed() -> None:
    # grams a, b; N = 3 texts (the empty one counts), df(a) = 2, df(b) = 1:
    # idf(a) = ln(4/3) + 1, idf(b) = ln(4/2) + 1; "ab" = (idf_a, idf_b)/‖·‖, "a" = (1, 0)
    vectors = tfidf_char_ngrams(["ab", "a", ""], n=(1, 1))
    assert vectors.shape == (3, 2)
    idf_a, idf_b = math.log(4 / 3) + 1, math.log(4 / 2) + 1
    norm = math.hypot(idf_a, idf_b)
    assert vectors[0] == pytest.approx([idf_a / norm, idf_b / norm]) and vectors[1] == pytest.approx([1.0, 0.0])
    assert vectors[2] == pytest.approx([0.0, 0.0])  # no grams: a zero row, cosine 0 with anything
    bigrams = tfidf_char_ngrams(["肝郁", "肝郁脾虚"], n=(2, 2))
    assert bigrams.shape == (2, 3)  # 肝郁, 郁脾, 脾虚
    assert tfidf_encoder_name((1, 2)) == "tfidf-char-1-2"


def test_tfidf_fallback_is_recorded_in_provenance() -> None:
    items, _ = build_choice_items(
        [item("1", "气虚血瘀证")], LABELS, tfidf_char_ngrams, encoder_name=tfidf_encoder_name()
    )
    assert items and all(i.meta["encoder"] == "tfidf-char-1-2" for i in items)


def test_cosine_matrix_is_clipped_and_zero_safe() -> None:
    a = np.array([[3.0, 4.0], [0.0, 0.0]])
    assert cosine_matrix(a, np.array([[6.0, 8.0], [4.0, -3.0]])) == pytest.approx(np.array([[1.0, 0.0], [0.0, 0.0]]))


def test_embedding_cache_sends_each_text_once_and_persists(tmp_path: Path) -> None:
    encode = StubEncoder(SPEC)
    with EmbeddingCache(tmp_path) as cache:
        cached = cached_encoder(encode, "stub@here", cache)
        first = cached(["气虚血瘀证", "气滞血瘀证", "气虚血瘀证"])
        second = cached(["气滞血瘀证", "肝郁血瘀证"])
    assert encode.calls == [["气虚血瘀证", "气滞血瘀证"], ["肝郁血瘀证"]]
    assert first[0] == pytest.approx(first[2]) and second[0] == pytest.approx(first[1])
    with EmbeddingCache(tmp_path) as cache:  # a new process would see the same file
        again = cached_encoder(encode, "stub@here", cache)(["肝郁血瘀证"])
        other = StubEncoder(SPEC, groups=9)
        cached_encoder(other, "another@there", cache)(["肝郁血瘀证"])  # another identity: not shared
    assert encode.calls[-1] == ["肝郁血瘀证"] and len(encode.calls) == 2 and len(other.calls) == 1
    assert again[0] == pytest.approx(second[1])


def test_embedding_cache_refuses_mixed_dimensions(tmp_path: Path) -> None:
    with EmbeddingCache(tmp_path) as cache:
        cached_encoder(StubEncoder(SPEC, groups=1), "same-name", cache)(["气虚血瘀证"])
        with pytest.raises(ValueError, match="differ in dimension"):
            cached_encoder(StubEncoder(SPEC, groups=3), "same-name", cache)(["气虚血瘀证", "气滞血瘀证"])


# --- DTR-F1 by embedding --------------------------------------------------------------------


def test_dtr_f1_embedding_matches_synonyms_char_f1_misses() -> None:
    encode = StubEncoder({"心悸": (0, 1.0), "心慌": (0, 0.97), "胸痛": (1, 1.0)})
    assert char_f1("心悸", "心慌") == 0.5 and dtr_f1(["心悸"], ["心慌"])["f1"] == 0.0
    assert dtr_f1_embedding(["心悸"], ["心慌"], encode, tau=0.9)["f1"] == 1.0
    both = dtr_f1_embedding(["心悸", "胸痛"], ["心慌"], encode, tau=0.9)  # 胸痛 is orthogonal: a false positive
    assert (both["tp"], both["fp"], both["fn"]) == (1, 1, 0) and both["precision"] == 0.5
    twice = dtr_f1_embedding(["心悸", "心悸"], ["心慌"], encode, tau=0.9)  # one-to-one: a repeat matches once
    assert (twice["tp"], twice["fp"]) == (1, 1)


def test_dtr_f1_embedding_edges_and_empty_lists() -> None:
    encode = StubEncoder({"心悸": (0, 1.0), "心慌": (0, 0.9)})
    assert dtr_f1_embedding(["心悸"], ["心慌"], encode, tau=0.9)["tp"] == 1  # cosine == tau is an edge
    assert dtr_f1_embedding(["心悸"], ["心慌"], encode, tau=0.91)["tp"] == 0
    calls = len(encode.calls)
    assert (
        dtr_f1_embedding([], [], encode, tau=0.9)["f1"] == 1.0
        and dtr_f1_embedding(["心悸"], [], encode, tau=0.9)["f1"] == 0.0
    )
    assert len(encode.calls) == calls  # nothing to match: the encoder is not called
    with pytest.raises(TypeError):
        dtr_f1_embedding("心悸", ["心慌"], encode, tau=0.9)


# --- the embeddings client against a FAKE server --------------------------------------------


def _embed(fake: FakeEmbeddingsServer, texts: list[str], **kwargs) -> list[list[float]]:
    async def run() -> list[list[float]]:
        async with fake:
            client = EmbeddingsClient(fake.base_url, "fake-embed", policy=FAST, **kwargs)
            try:
                return await client.embed(texts)
            finally:
                await client.aclose()

    return asyncio.run(run())


def test_client_batches_and_reads_indexes() -> None:
    fake = FakeEmbeddingsServer(reverse_order=True)
    texts = ["心悸", "心慌", "胸痛", "头晕", "气虚血瘀证"]
    assert _embed(fake, texts, batch_size=2) == [default_vector(t) for t in texts]
    assert fake.request_count == 3 and [r.payload["input"] for r in fake.requests] == [texts[:2], texts[2:4], texts[4:]]
    assert fake.requests[0].path == "/v1/embeddings" and fake.requests[0].payload["model"] == "fake-embed"


def test_client_sends_the_key_from_the_named_variable_and_never_prints_it(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-test-embed-0000"
    monkeypatch.setenv(KEY_ENV, secret)
    fake = FakeEmbeddingsServer()
    _embed(fake, ["心悸"], api_key_env=KEY_ENV)
    assert fake.requests[0].authorization == f"Bearer {secret}"
    hostile = FakeEmbeddingsServer(script=[status(400, message=f"bad key {secret}")])
    with pytest.raises(EmbeddingsError) as caught:
        _embed(hostile, ["心悸"], api_key_env=KEY_ENV)
    assert secret not in str(caught.value) and "HTTP 400" in str(caught.value)
    monkeypatch.delenv(KEY_ENV)
    with pytest.raises(EmbeddingsError, match="is not set"):
        _embed(FakeEmbeddingsServer(), ["心悸"], api_key_env=KEY_ENV)


def test_client_retries_a_5xx_then_names_url_and_status() -> None:
    fake = FakeEmbeddingsServer(script=[server_error(503), server_error(503)])
    with pytest.raises(EmbeddingsError) as caught:
        _embed(fake, ["心悸"])
    message = str(caught.value)
    assert (
        fake.request_count == 2 and "/v1/embeddings" in message and "HTTP 503" in message and "server_error" in message
    )
    assert _embed(FakeEmbeddingsServer(script=[server_error(500)]), ["心悸"]) == [default_vector("心悸")]


def test_client_refuses_a_body_of_the_wrong_shape() -> None:
    from tests.fakes import raw_json

    fake = FakeEmbeddingsServer(script=[raw_json({"data": [{"embedding": [1.0]}]})] * 2)
    with pytest.raises(EmbeddingsError, match="bad_response.*1 embeddings for 2 inputs"):
        _embed(fake, ["心悸", "心慌"])


# --- the CLI ----------------------------------------------------------------------------------


def _suite(tmp_path: Path) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    rows = [
        {
            "id": i,
            "task": "SD",
            "track": "tcm",
            "gold_type": "classification",
            "question": f"病例{i}。\n{TCM_SD_INSTRUCTION}",
            "gold": gold,
        }
        for i, gold in enumerate(["气虚血瘀证", "气滞血瘀证", "肝郁脾虚证", "不在表中证"], start=1)
    ]
    (folder / "items.jsonl").write_text(
        "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8"
    )
    return folder


CLI_LABELS = (
    "气虚血瘀证\n气滞血瘀证\n肝郁脾虚证\n肝郁血瘀证\n\n气虚痰湿证\n气血两虚证\n肝郁气滞证\n脾虚湿盛证\n气滞血瘀证\n"
)


def _labels(tmp_path: Path, text: str = CLI_LABELS) -> Path:
    path = tmp_path / "labels.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_cli_writes_items_that_load_back_through_the_medpool_loader(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out" / "dr.jsonl"
    code = dr_main(
        [str(_suite(tmp_path)), "--labels", str(_labels(tmp_path)), "--out", str(out), "--suite-name", "dr-suite"]
    )
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert (
        "TF-IDF fallback" in printed
        and "1 duplicate line(s) ignored" in printed
        and "gold_not_in_labels" not in printed
    )
    # 不在表中证 joins the label space (8 distinct labels + it) but shares only 证 with the others: too far
    assert "label space 9 label(s)" in printed and "too_few_in_band: 1" in printed
    loaded = load_items([out]).items
    written = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [i.to_record() for i in loaded] == written and len(loaded) == 3
    assert {i.suite for i in loaded} == {"dr-suite"} and all(i.meta["encoder"] == "tfidf-char-1-2" for i in loaded)
    assert all(dict(i.options)[i.gold] == i.meta["gold_label"] for i in loaded)


def test_cli_output_is_byte_identical_in_a_subprocess(tmp_path: Path) -> None:
    suite, labels = _suite(tmp_path), _labels(tmp_path)
    here, there = tmp_path / "here.jsonl", tmp_path / "there.jsonl"
    assert dr_main([str(suite), "--labels", str(labels), "--out", str(here)]) == 0
    env = {**os.environ, "PYTHONHASHSEED": "987"}
    done = subprocess.run(
        [sys.executable, "-m", "eval.decision_recognition", str(suite), "--labels", str(labels), "--out", str(there)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "RuntimeWarning" not in done.stderr
    assert here.read_bytes() == there.read_bytes()


@pytest.mark.parametrize(
    "extra, label_text, message",
    [
        (["--out", "x.json"], None, "--out must end in .jsonl"),
        (["--k", "1"], None, "--k must be between 2 and 26"),
        (["--band-abs", "0.9", "0.2"], None, "--band-abs must be LOW HIGH"),
        (["--band", "0.5", "1.5"], None, "--band-abs must be LOW HIGH"),
        (["--band-quantiles", "0.2", "1.5"], None, "--band-quantiles must be QLOW QHIGH"),
        (["--band-quantiles", "0.9", "0.2"], None, "--band-quantiles must be QLOW QHIGH"),
        (["--embeddings-url", "http://127.0.0.1:9/v1"], None, "--embeddings-url and --embeddings-model go together"),
        (["--embeddings-url", "ftp://x", "--embeddings-model", "m"], None, "--embeddings-url must be http"),
        (["--api-key-env", "sk-123"], None, "--api-key-env needs --embeddings-url"),
        ([], "气虚血瘀证\n。。\n", "labels.txt:2: '。。' is not a label"),
        ([], "\n\n", "the label file has no labels"),
    ],
)
def test_cli_bad_input_exits_2_naming_the_flag_or_line(tmp_path: Path, capsys, extra, label_text, message) -> None:
    labels = _labels(tmp_path, label_text) if label_text is not None else _labels(tmp_path)
    argv = [str(_suite(tmp_path)), "--labels", str(labels), "--out", str(tmp_path / "o.jsonl"), *extra]
    assert dr_main(argv) == 2
    assert message in capsys.readouterr().err


def test_cli_refuses_out_inside_the_input_and_a_broken_suite(tmp_path: Path, capsys) -> None:
    suite = _suite(tmp_path)
    assert dr_main([str(suite), "--labels", str(_labels(tmp_path)), "--out", str(suite / "dr.jsonl")]) == 2
    assert "lies in the input" in capsys.readouterr().err
    (suite / "items.jsonl").write_text('{"id": 1, "task": "SD"\n', encoding="utf-8")
    assert dr_main([str(suite), "--labels", str(_labels(tmp_path)), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "items.jsonl:1" in capsys.readouterr().err


def test_cli_out_below_a_file_exits_2_naming_it(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    out = blocker / "dr.jsonl"
    assert dr_main([str(_suite(tmp_path)), "--labels", str(_labels(tmp_path)), "--out", str(out)]) == 2
    assert f"--out {blocker}: cannot create the folder" in capsys.readouterr().err


def test_cli_with_nothing_convertible_exits_1_and_writes_nothing(tmp_path: Path, capsys) -> None:
    out = tmp_path / "o.jsonl"
    argv = [str(_suite(tmp_path)), "--labels", str(_labels(tmp_path)), "--out", str(out), "--band-abs", "0.5", "0.95"]
    assert dr_main(argv) == 1  # a band meant for a sentence encoder, with the TF-IDF fallback
    captured = capsys.readouterr()
    assert (
        "too_few_in_band: 4" in captured.out
        and "leave out --band-abs" in captured.out
        and "nothing written" in captured.err
    )
    assert not out.exists()


def _endpoint_argv(tmp_path: Path, url: str, model: str, cache_dir: Path) -> list[str]:
    """The CLI's arguments for this module's suite and labels, encoded by ``model`` at the endpoint ``url``."""
    suite, labels, out = str(_suite(tmp_path)), str(_labels(tmp_path)), str(tmp_path / "o.jsonl")
    endpoint = ["--embeddings-url", url, "--embeddings-model", model, "--cache-dir", str(cache_dir)]
    return [suite, "--labels", labels, "--out", out, *endpoint]


def test_cli_with_an_embeddings_endpoint_uses_and_fills_the_cache(tmp_path: Path, capsys, fakes: ThreadedFakes) -> None:
    base = {
        "气虚血瘀证": [1.0, 0.0, 0.0],
        "气滞血瘀证": [0.9, 0.3, 0.1],
        "肝郁血瘀证": [0.8, 0.5, 0.0],
        "气虚痰湿证": [0.7, 0.0, 0.6],
        "肝郁脾虚证": [0.0, 1.0, 0.0],
        "肝郁气滞证": [0.2, 0.9, 0.1],
        "气血两虚证": [0.6, 0.6, 0.4],
        "脾虚湿盛证": [0.1, 0.8, 0.5],
    }
    fake = fakes.start(FakeEmbeddingsServer(vectors=base))
    argv = _endpoint_argv(tmp_path, fake.base_url, "fake-embed", tmp_path / "cache")
    assert dr_main(argv) == 0
    first = capsys.readouterr().out
    requests = fake.request_count
    assert dr_main(argv) == 0
    assert fake.request_count == requests == 1  # one batch the first time; every vector cached the second
    identity = f"fake-embed@{fake.base_url}"
    items = load_items([tmp_path / "o.jsonl"]).items
    assert f"encoder: {identity}" in first and {i.meta["encoder"] for i in items} == {identity}
    assert (tmp_path / "cache" / "embeddings.sqlite").is_file()


def test_cli_reports_a_dead_endpoint_with_exit_1(tmp_path: Path, capsys, fakes: ThreadedFakes) -> None:
    fake = fakes.start(FakeEmbeddingsServer(default=status(404, message="no such model")))
    argv = _endpoint_argv(tmp_path, fake.base_url, "nope", tmp_path / "c")
    assert dr_main(argv) == 1
    err = capsys.readouterr().err
    assert f"{fake.base_url}/embeddings" in err and "HTTP 404" in err


def test_embed_texts_one_shot(fakes: ThreadedFakes) -> None:
    fake = fakes.start(FakeEmbeddingsServer())
    assert embed_texts(fake.base_url, "m", ["心悸", "心慌"]) == [default_vector("心悸"), default_vector("心慌")]


# --- the TCM-SD sample (../shared/data) -----------------------------------------------------

# Our own list of common TCM syndromes, added to the sample's norm_syndrome values.
EXTRA_SYNDROMES = (
    "气滞血瘀证",
    "气血两虚证",
    "肝阳上亢证",
    "痰瘀互结证",
    "痰浊中阻证",
    "湿热下注证",
    "肝郁脾虚证",
    "肝肾阴虚证",
    "脾肾阳虚证",
    "气阴两虚证",
    "阴虚火旺证",
    "瘀血阻络证",
    "肝胆湿热证",
    "心脾两虚证",
    "寒湿痹阻证",
    "痰热腑实证",
    "肝火上炎证",
    "脾胃虚弱证",
    "肾精不足证",
    "气虚痰湿证",
    "血热毒盛证",
    "湿热蕴结证",
)


def test_dr_items_from_the_tcm_sd_sample(tcm_sd_sample: Path, tmp_path: Path, capsys) -> None:
    records = [json.loads(line) for line in tcm_sd_sample.read_text(encoding="utf-8").splitlines() if line.strip()]
    golds = sorted({r["norm_syndrome"] for r in records})
    labels = _labels(tmp_path, "\n".join([*golds, *EXTRA_SYNDROMES]) + "\n")
    out = tmp_path / "tcm-sd-dr.jsonl"
    assert dr_main([str(tcm_sd_sample), "--labels", str(labels), "--out", str(out), "--band-abs", "0.1", "0.95"]) == 0
    printed = capsys.readouterr().out
    items = load_items([out]).items
    sources = load_items([tcm_sd_sample]).items
    assert len(sources) == len(records)
    # The four sample golds with a character-sharing neighbour convert; 痰湿蒙窍证 shares only 痰湿
    # (with 气虚痰湿证) and nothing else above 0.1, so it is reported.
    assert len(items) == len(records) - 1 and "too_few_in_band: 1" in printed
    for dr in items:
        source = next(s for s in sources if s.id == dr.meta["source_item_id"])
        assert (
            dict(dr.options)[dr.gold] == source.gold
            and dr.task == "TCM-SD-DR"
            and dr.meta["encoder"] == "tfidf-char-1-2"
        )
        assert len(dr.options) == 4 and all(0.1 <= d["similarity"] <= 0.95 for d in dr.meta["distractors"])
        assert dr.meta["band"] == {"quantiles": None, "cosines": (0.1, 0.95), "label_pairs": 351}
        assert dr.question.endswith(DR_INSTRUCTION) and source.question.startswith(dr.question[: -len(DR_INSTRUCTION)])
    assert LETTERS.startswith("".join(label for label, _ in items[0].options))


def test_client_names_per_token_vectors_from_an_unpooled_server() -> None:
    from tests.fakes import raw_json

    unpooled = {"data": [{"index": 0, "embedding": [[0.1, 0.2], [0.3, 0.4]]}]}  # llama_cpp.server without pooling
    fake = FakeEmbeddingsServer(script=[raw_json(unpooled)] * 2)
    with pytest.raises(EmbeddingsError, match="2 per-token vectors, not one pooled vector"):
        _embed(fake, ["心悸"])
