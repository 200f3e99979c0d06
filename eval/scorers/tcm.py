"""TCM scorers: open labels (DTR-F1), extraction (multiset P/R/F1), herb doses (cosine + MAE),
syndrome classification (accuracy; macro-F1 at aggregate from ``details.parsed``) and CHIP cases
(P1–P4 and the weighted total)."""

from __future__ import annotations

from eval.items import Item, thaw
from eval.items.scores import Score
from eval.metrics.tcm.chip_format import ChipAnswer, chip_case_score
from eval.metrics.tcm.linglan import dose_score, dtr_f1, extraction_prf
from eval.scorers.answer_parsing import (
    clean_answer,
    fold,
    parse_classification,
    parse_open_labels,
)
from eval.scorers.registry import deterministic_score, register
from eval.scorers.tcm_parsing import (
    parse_doses,
    parse_entities,
    parse_tcm_case,
    requested_entity_types,
)

DOSE_PASS_COSINE = 0.9


@register("open_label")
def score_open_label(item: Item, answer: str) -> Score:
    """value = DTR-F1 (τ = 0.7) between the parsed labels and the gold labels; 证/型 are not stripped."""
    text, notes = clean_answer(answer)
    parsed = parse_open_labels(text)
    gold = [fold(label) for label in item.gold]
    metrics = dtr_f1(list(parsed.value), gold)
    return deterministic_score(metrics["f1"], list(parsed.value), (*notes, *parsed.notes), metrics=metrics)


@register("extraction")
def score_extraction(item: Item, answer: str) -> Score:
    """value = multiset F1 over (type, normalised entity) pairs (``eval.extraction_prf``)."""
    text, notes = clean_answer(answer)
    question = item.question if item.question is not None else item.chat_messages()[-1]["content"]
    types = {fold(t) for t in requested_entity_types(fold(question), item.gold)}
    parsed = parse_entities(text, types)
    gold = [{"entity": fold(e["entity"]), "type": fold(e["type"])} for e in item.gold]
    metrics = extraction_prf(list(parsed.value), gold)
    return deterministic_score(metrics["f1"], [dict(e) for e in parsed.value], (*notes, *parsed.notes), metrics=metrics)


@register("quantitative")
def score_quantitative(item: Item, answer: str) -> Score:
    """value = cosine of the dose vectors over the union of herbs; metrics add MAE (grams, over
    shared herbs; absent when none is shared) and the shared count; passed = cosine ≥ 0.9."""
    text, notes = clean_answer(answer)
    parsed = parse_doses(text)
    gold = {fold(herb): grams for herb, grams in item.gold.items()}
    result = dose_score(parsed.value, gold)
    metrics = {"cosine": result["cosine"], "shared": result["shared"]}
    if result["mae"] is not None:
        metrics["mae"] = result["mae"]
    return deterministic_score(
        result["cosine"],
        dict(parsed.value),
        (*notes, *parsed.notes),
        passed=result["cosine"] >= DOSE_PASS_COSINE,
        metrics=metrics,
    )


@register("classification")
def score_classification(item: Item, answer: str) -> Score:
    """value = 1 when the parsed label is the gold. The label set is ``meta["labels"]`` (else the gold
    alone); ``details.parsed`` keeps the prediction so macro-F1 can be computed at aggregate."""
    text, notes = clean_answer(answer)
    labels = list(item.meta.get("labels") or [item.gold])
    parsed = parse_classification(text, labels)
    value = float(parsed.value == item.gold)
    extra_notes = () if item.meta.get("labels") else ("no label set in meta: matched against the gold only",)
    # predicted / gold label and the label set: routing computes macro-F1 over the bucket from them
    return deterministic_score(
        value,
        parsed.value,
        (*notes, *extra_notes, *parsed.notes),
        passed=bool(value),
        metrics={"accuracy": value},
        predicted_label=parsed.value,
        gold_label=item.gold,
        labels=labels,
    )


@register("tcm_case")
def score_tcm_case(item: Item, answer: str) -> Score:
    """value = CHIP total 0.2·P1 + 0.3·P2 + 0.4·P3 + 0.1·P4 (``eval.chip_case_score``); both sides
    NFKC-folded so full-width punctuation does not cost P1 or P4."""
    text, notes = clean_answer(answer)
    gold = thaw(item.gold)
    parsed = parse_tcm_case(text, item.local_id, item.meta.get("mechanism_options"), item.meta.get("syndrome_options"))
    gold_answer = ChipAnswer(
        item.local_id,
        tuple(fold(i).strip() for i in gold["clinical_info"]),
        tuple(gold["mechanisms"]),
        tuple(gold["syndromes"]),
        " ".join(fold(gold["summary"]).split()),
    )
    metrics = chip_case_score(parsed.value, gold_answer)
    pred = parsed.value
    shown = {
        "clinical_info": list(pred.clinical_info),
        "mechanisms": list(pred.mechanisms),
        "syndromes": list(pred.syndromes),
        "summary": pred.summary,
    }
    return deterministic_score(metrics["total"], shown, (*notes, *parsed.notes), metrics=metrics)
