"""Decision recognition at its defaults: the golds join the label space, and the distractor band is
taken as quantiles of the label-pair cosines, so one setting gives items under any encoder.

The acceptance run reads the TCM-SD sample in ../shared/data by path (skipped where ../shared is
absent, a failure under CI=true); the rest builds its own items."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from eval.decision_recognition import DEFAULT_QUANTILES, Band, build_choice_items, resolve_band
from eval.encoders import Encoder, tfidf_char_ngrams, tfidf_encoder_name
from eval.items import Item, Source
from eval.loaders import load_items
from eval.loaders.formats.tcm_sd import INSTRUCTION as TCM_SD_INSTRUCTION
from pool.decision_recognition import main as dr_main

# A label list of 20 common TCM syndromes, none of them a gold of the TCM-SD sample.
TWENTY_SYNDROMES = (
    "肝郁气滞证",
    "脾胃虚弱证",
    "气滞血瘀证",
    "气血两虚证",
    "肝阳上亢证",
    "痰瘀互结证",
    "痰浊中阻证",
    "湿热下注证",
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
    "肾精不足证",
    "风寒袭表证",
)
# Golds for items built here; none is in TWENTY_SYNDROMES, so every one must join the label space.
OWN_GOLDS = ("肝郁脾虚证", "气虚血瘀证", "湿热蕴结证", "风痰阻络证", "心肾不交证")


def own_item(local_id: int, gold: object, gold_type: str = "classification", **fields: object) -> Item:
    return Item(
        id=Item.make_id("t", "SD", str(local_id)),
        suite="t",
        track="tcm",
        task="SD",
        gold_type=gold_type,
        gold=gold,
        source=Source("t.jsonl", local_id),
        question=f"主诉：头晕。\n{TCM_SD_INSTRUCTION}",
        **fields,
    )


def compressed(encode: Encoder, weight: float) -> Encoder:
    """An encoder whose cosines are cos' = w·cos + (1 − w) for the unit rows ``encode`` gives.

    Each row v becomes [√w·v, √(1 − w)], so v'·u' = w·(v·u) + (1 − w) and ‖v'‖ = 1. With w = 0.25 the
    TF-IDF cosines of distinct syndromes (0 to 0.5) land in 0.75 to 0.88, where a sentence encoder puts them.
    """

    def encode_compressed(texts: list[str]) -> np.ndarray:
        vectors = np.asarray(encode(texts), dtype=float)
        return np.hstack([math.sqrt(weight) * vectors, np.full((len(texts), 1), math.sqrt(1 - weight))])

    return encode_compressed


def distractors(items: list[Item]) -> list[tuple[str, list[str]]]:
    return [(dr.id, [d["label"] for d in dr.meta["distractors"]]) for dr in items]


# --- the band is relative to the encoder ------------------------------------------------------


def test_a_compressed_encoder_picks_the_same_distractors_at_the_default_band() -> None:
    sources = [own_item(i, gold) for i, gold in enumerate(OWN_GOLDS, start=1)]
    plain, plain_problems = build_choice_items(sources, TWENTY_SYNDROMES, tfidf_char_ngrams, encoder_name="tfidf")
    sentence_like, _ = build_choice_items(
        sources, TWENTY_SYNDROMES, compressed(tfidf_char_ngrams, 0.25), encoder_name="s"
    )
    assert len(plain) >= 4 and distractors(sentence_like) == distractors(plain)
    low, high = plain[0].meta["band"]["cosines"]
    low_c, high_c = sentence_like[0].meta["band"]["cosines"]
    assert (low_c, high_c) == pytest.approx((0.25 * low + 0.75, 0.25 * high + 0.75), abs=2e-6)
    assert sentence_like[0].meta["band"]["quantiles"] == DEFAULT_QUANTILES == plain[0].meta["band"]["quantiles"]
    assert [p.kind for p in plain_problems] == ["too_few_in_band"] * (len(OWN_GOLDS) - len(plain))


def test_an_absolute_band_suits_one_encoder_only() -> None:
    sources = [own_item(i, gold) for i, gold in enumerate(OWN_GOLDS, start=1)]
    sentence_band = Band.cosines(0.5, 0.95)
    plain, _ = build_choice_items(
        sources, TWENTY_SYNDROMES, tfidf_char_ngrams, encoder_name="tfidf", band=sentence_band
    )
    sentence_like, _ = build_choice_items(
        sources, TWENTY_SYNDROMES, compressed(tfidf_char_ngrams, 0.25), encoder_name="s", band=sentence_band
    )
    assert plain == [] and len(sentence_like) == len(OWN_GOLDS)
    assert sentence_like[0].meta["band"] == {"quantiles": None, "cosines": (0.5, 0.95), "label_pairs": 300}


def test_resolve_band_is_numpys_linear_quantile_hand_checked() -> None:
    pairs = np.array([0.5, 0.1, 0.4, 0.2, 0.3])
    # sorted 0.1 … 0.5, n = 5: Q(0.5) at h = 2 → 0.3; Q(0.9) at h = 3.6 → 0.4 + 0.6·(0.5 − 0.4) = 0.46
    resolved = resolve_band(Band.quantiles(0.5, 0.9), pairs)
    assert (resolved.low, resolved.high, resolved.quantiles, resolved.label_pairs) == (0.3, 0.46, (0.5, 0.9), 5)
    assert resolved.record() == {"quantiles": [0.5, 0.9], "cosines": [0.3, 0.46], "label_pairs": 5}
    assert resolve_band(Band.cosines(0.2, 0.8), pairs).record() == {
        "quantiles": None,
        "cosines": [0.2, 0.8],
        "label_pairs": 5,
    }
    with pytest.raises(ValueError, match="at least two labels"):
        resolve_band(Band.quantiles(0.5, 0.9), np.array([]))


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Band.quantiles(0.9, 0.5), "band low must be <= band high"),
        (lambda: Band.quantiles(0.5, 1.2), r"band high \(quantile\) must be <= 1.0"),
        (lambda: Band.quantiles(-0.1, 0.5), r"band low \(quantile\) must be >= 0.0"),
        (lambda: Band.cosines(-1.5, 0.5), r"band low \(cosine\) must be >= -1.0"),
        (lambda: Band(0.1, 0.2, "percent"), "band unit must be"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_band_is_refused_naming_the_edge(make, message) -> None:
    with pytest.raises(ValueError, match=message):
        make()


# --- the label space ---------------------------------------------------------------------------


def test_only_the_golds_of_convertible_items_join_the_label_space() -> None:
    sources = [
        own_item(1, "气虚血瘀证"),
        own_item(2, ["甲乙证", "丙丁证"], gold_type="open_label"),  # multi_gold
        own_item(3, "戊己证", scorable=False, skip_reason="disputed"),
    ]
    built, problems = build_choice_items(
        sources, TWENTY_SYNDROMES, tfidf_char_ngrams, encoder_name=tfidf_encoder_name()
    )
    assert [p.kind for p in problems] == ["multi_gold", "unscorable"]
    assert built[0].meta["label_space_size"] == len(TWENTY_SYNDROMES) + 1
    assert built[0].meta["band"]["label_pairs"] == 21 * 20 // 2


def test_a_label_space_smaller_than_k_is_too_few_without_calling_the_encoder() -> None:
    calls: list[list[str]] = []

    def encode(texts: list[str]) -> np.ndarray:
        calls.append(texts)
        return tfidf_char_ngrams(texts)

    _, problems = build_choice_items([own_item(1, "气滞血瘀证")], ["气虚血瘀证"], encode, encoder_name="e", k=4)
    assert [p.kind for p in problems] == ["too_few_in_band"] and calls == []
    assert "the label space has 2 label(s) and k=4 options need 4" in problems[0].detail


def test_a_quantile_band_too_narrow_says_which_quantiles() -> None:
    _, problems = build_choice_items(
        [own_item(1, "心肾不交证")],
        TWENTY_SYNDROMES,
        tfidf_char_ngrams,
        encoder_name="e",
        band=Band.quantiles(0.999, 1.0),
    )
    assert [p.kind for p in problems] == ["too_few_in_band"]
    assert "(quantiles 0.999-1.0 of 210 label-pair cosines)" in problems[0].detail


# --- the CLI on the TCM-SD sample --------------------------------------------------------------


@pytest.fixture
def twenty_labels(tmp_path: Path) -> Path:
    path = tmp_path / "syndromes.txt"
    path.write_text("\n".join(TWENTY_SYNDROMES) + "\n", encoding="utf-8")
    return path


def test_tcm_sd_sample_with_20_labels_at_defaults_gives_items(
    tcm_sd_sample: Path, twenty_labels: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "dr.jsonl"
    assert dr_main([str(tcm_sd_sample), "--labels", str(twenty_labels), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    sources = {source.id: source for source in load_items([tcm_sd_sample]).items}
    items = load_items([out]).items
    assert len(items) >= 4 and "gold_not_in_labels" not in printed and "encoder: tfidf-char-1-2" in printed
    golds = {source.gold for source in sources.values()}
    space = len(TWENTY_SYNDROMES) + len(golds)
    assert (
        f"(quantiles 0.5 0.99 of {space * (space - 1) // 2} label-pair cosines); label space {space} label(s)"
        in printed
    )
    for dr in items:
        texts = [text for _, text in dr.options]
        assert (
            len(texts) == 4 == len(set(texts)) and dict(dr.options)[dr.gold] == sources[dr.meta["source_item_id"]].gold
        )
        band = dr.meta["band"]
        assert band["quantiles"] == (0.5, 0.99) and band["cosines"][0] <= band["cosines"][1]
        assert all(band["cosines"][0] <= d["similarity"] <= band["cosines"][1] for d in dr.meta["distractors"])
    again = tmp_path / "again.jsonl"
    assert dr_main([str(tcm_sd_sample), "--labels", str(twenty_labels), "--out", str(again)]) == 0
    assert again.read_bytes() == out.read_bytes()


def test_the_recorded_band_repeats_the_run_as_an_absolute_band(
    tcm_sd_sample: Path, twenty_labels: Path, tmp_path: Path
) -> None:
    relative, absolute = tmp_path / "relative.jsonl", tmp_path / "absolute.jsonl"
    assert dr_main([str(tcm_sd_sample), "--labels", str(twenty_labels), "--out", str(relative)]) == 0
    first = [json.loads(line) for line in relative.read_text(encoding="utf-8").splitlines()]
    low, high = first[0]["meta"]["band"]["cosines"]
    assert (
        dr_main(
            [
                str(tcm_sd_sample),
                "--labels",
                str(twenty_labels),
                "--out",
                str(absolute),
                "--band-abs",
                str(low),
                str(high),
            ]
        )
        == 0
    )
    second = [json.loads(line) for line in absolute.read_text(encoding="utf-8").splitlines()]
    assert [(r["options"], r["gold"], r["meta"]["distractors"]) for r in second] == [
        (r["options"], r["gold"], r["meta"]["distractors"]) for r in first
    ]
    assert {r["meta"]["band"]["quantiles"] is None for r in second} == {True}


def test_closed_labels_report_golds_missing_from_the_list(
    tcm_sd_sample: Path, twenty_labels: Path, tmp_path: Path, capsys
) -> None:
    out = tmp_path / "dr.jsonl"
    assert dr_main([str(tcm_sd_sample), "--labels", str(twenty_labels), "--out", str(out), "--closed-labels"]) == 1
    printed = capsys.readouterr().out
    records = len(load_items([tcm_sd_sample]).items)
    assert f"gold_not_in_labels: {records}" in printed and not out.exists()


def test_cli_band_flags_exclude_each_other_and_help_explains_them(tmp_path: Path, twenty_labels: Path, capsys) -> None:
    with pytest.raises(SystemExit) as done:
        dr_main(
            [
                str(tmp_path),
                "--labels",
                str(twenty_labels),
                "--out",
                str(tmp_path / "o.jsonl"),
                "--band-quantiles",
                "0.5",
                "0.99",
                "--band-abs",
                "0.1",
                "0.9",
            ]
        )
    assert done.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    with pytest.raises(SystemExit) as done:
        dr_main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert done.value.code == 0
    assert "--band-quantiles QLOW QHIGH" in text and "quantiles (0-1) of the cosines of all label pairs" in text
    assert "--band-abs LOW HIGH" in text and "--closed-labels" in text and "golds of the converted items" in text
