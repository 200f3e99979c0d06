"""The router's decisions as pure functions: the fitted encoder, the classifier's votes, routes and their
chains, the thresholds, the header, and the end-to-end validation row on seeded data where the
classifier is strong and where it is useless."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from eval.encoders import tfidf_char_ngrams
from pool.serve.metrics import Metrics
from routing.build import BuildOptions
from routing.load.runs import load_runs
from routing.serve.classifier import BucketClassifier, FittedTfidf
from routing.serve.routes import NEVER, Thresholds, choose_thresholds, resolve, route_header, route_table
from routing.serve.validation import end_to_end
from tests.routing.run_fixtures import JUDGE, row, write_run

SUITE = Path(__file__).resolve().parents[3] / "shared" / "data" / "book-gold" / "internists.yaml"
PARAMS = BuildOptions(bootstrap=200).parameters()
DOMAINS = ("cardiology:htn", "cardiology:af", "cardiology:hf", "endocrine:dm", "endocrine:thyroid", "endocrine:gout")
WORDS = {
    "cardiology:htn": "高血压 降压 血压计",
    "cardiology:af": "房颤 心律 抗凝",
    "cardiology:hf": "心衰 水肿 气短",
    "endocrine:dm": "糖尿病 血糖 胰岛素",
    "endocrine:thyroid": "甲状腺 甲亢 碘",
    "endocrine:gout": "痛风 尿酸 关节",
}


def specialty_run(tmp: Path, seed: int = 0, per_domain: int = 30) -> tuple[Path, dict[str, str], dict[str, str]]:
    """Six domains, a FAKE specialist per domain (0.9 there, 0.4 elsewhere) and a generalist (0.7 everywhere):
    (run folder, informative texts, texts with no trace of the domain)."""
    rng = np.random.default_rng(seed)
    rows, informative, useless = [], {}, {}
    models = {f"spec{j}": {d: 0.9 if i == j else 0.4 for i, d in enumerate(DOMAINS)} for j in range(len(DOMAINS))}
    models["gen"] = dict.fromkeys(DOMAINS, 0.7)
    for d, domain in enumerate(DOMAINS):
        for i in range(per_domain):
            item = f"q{d}_{i}"
            u = rng.random()  # shared difficulty: a stronger model is right wherever a weaker one is
            words = WORDS[domain].split()
            informative[f"synthetic/consult/{item}"] = f"{words[i % 3]}患者{i}岁，{words[(i + 1) % 3]}怎么办？"
            useless[f"synthetic/consult/{item}"] = "".join(rng.choice(list("请问医生患者最近怎么办需要注意什么"), 12))
            for model, skill in models.items():
                value = float(u < skill[domain])
                rows.append(
                    row(model, item, "consult", "criteria", value, passed=bool(value), domain=domain, judge=JUDGE)
                )
    return write_run(tmp / f"run-{seed}", rows), informative, useless


def test_the_fitted_tfidf_is_the_project_encoder_on_its_training_texts() -> None:
    texts = ["高血压怎么吃药", "糖尿病饮食", "", "血压高 头痛"]
    encoder, vectors = FittedTfidf.fit(texts)
    assert np.allclose(vectors.toarray(), tfidf_char_ngrams(texts))
    assert np.allclose(encoder.transform(texts[:2]).toarray(), vectors[:2].toarray())


@pytest.mark.skipif(not SUITE.is_file() and os.environ.get("CI") != "true", reason="../shared/data is absent")
def test_one_guess_votes_as_the_batch_does_and_the_suite_accuracy_is_as_reported() -> None:
    from eval.loaders import load_items
    from routing.serve.accuracy import item_path, suite_accuracy
    from routing.serve.texts import request_text

    items = load_items([SUITE]).items
    texts, paths = [request_text(i.chat_messages()) for i in items], [item_path(i) for i in items]
    classifier = BucketClassifier.fit(texts, paths)
    codes, confidence = classifier.guess_many(texts)
    for i, text in enumerate(texts):
        guess = classifier.guess(text)
        assert guess.labels == tuple(classifier.names[j][codes[i, j]] for j in range(3))
        assert np.allclose(guess.confidences, confidence[i])
    measured = suite_accuracy(items)
    assert (measured["items"], measured["buckets"], measured["systems"]) == (183, 92, 17)
    assert measured["5-fold"]["bucket"] == pytest.approx(0.39, abs=0.02)
    assert measured["5-fold"]["system"] == pytest.approx(0.51, abs=0.02)


MANIFEST = {
    "default": {"model": "gen", "decisive": False, "tied_top": ["gen", "b"]},
    "families": {"specialty": {"model": "fam", "decisive": True, "tied_top": ["fam"]}},
    "buckets": {
        "specialty/domain/cardiology:htn": {
            "model": "a",
            "served_by": "specialty/domain/cardiology:htn",
            "decisive": False,
            "tied_top": ["a", "c"],
            "routable": True,
        },
        "specialty/domain/cardiology:af": {"model": "s", "served_by": "specialty/system/cardiology", "routable": False},
        "specialty/system/cardiology": {
            "model": "s",
            "served_by": "specialty/system/cardiology",
            "decisive": True,
            "tied_top": ["s"],
            "routable": True,
        },
    },
}


def test_routes_carry_their_decision_and_the_chain_behind_it() -> None:
    table = route_table(MANIFEST)
    htn = table.route("specialty/domain/cardiology:htn")
    assert (htn.model, htn.decisive, htn.chain) == ("a", False, ("a", "c", "gen"))
    af = table.route("specialty/domain/cardiology:af")  # not routable: its system serves it
    assert (af.target, af.model, af.decisive, af.chain) == ("specialty/system/cardiology", "s", True, ("s", "gen"))
    assert table.route("specialty").chain == ("fam", "gen")
    assert table.route("exam/task/unknown") == table.default and table.default.chain == ("gen", "b")
    header = route_header(htn, "a", "classifier", "f" * 64)
    assert (
        header == f"bucket=specialty/domain/cardiology:htn; model=a; by=classifier; decisive=false; manifest={'f' * 64}"
    )
    assert route_header(table.route("x"), "模型;1", "hint", "0").isascii()


def test_a_guess_climbs_to_the_first_level_it_is_confident_about() -> None:
    labels = ("specialty/domain/cardiology:htn", "specialty/system/cardiology", "specialty")
    limits = Thresholds(0.6, 0.5, 0.4)
    assert resolve(labels, (0.7, 0.9, 1.0), limits) == (labels[0], "classifier", 0)
    assert resolve(labels, (0.3, 0.5, 1.0), limits) == (labels[1], "fallback", 1)
    assert resolve((labels[0], "", "exam"), (0.3, 0.9, 0.9), limits) == (
        "exam",
        "fallback",
        2,
    )  # no system outside specialty
    assert resolve(labels, (0.1, 0.1, 0.1), limits) == ("default", "fallback", 3)


def test_thresholds_trust_a_classifier_that_pays_and_climb_past_one_that_does_not() -> None:
    table = route_table(MANIFEST)
    labels = [("specialty/domain/cardiology:htn", "specialty/system/cardiology", "specialty")] * 4
    models = ["a", "s", "fam", "gen"]
    confident = np.array([[0.9, 0.9, 1.0], [0.8, 0.9, 1.0], [0.3, 0.9, 1.0], [0.2, 0.9, 1.0]])
    pays = np.array([[1, 0, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0, 0]], dtype=float)  # right when confident
    limits, mean = choose_thresholds(labels, confident, table, pays, models)
    assert mean == 1.0 and 0.3 < limits.bucket <= 0.8 and limits.system <= 0.9
    never = np.array([[0, 0, 0, 1]] * 4, dtype=float)  # only the default model is ever right
    limits, mean = choose_thresholds(labels, confident, table, never, models)
    assert mean == 1.0 and limits.as_tuple() == (NEVER, NEVER, NEVER)


def test_end_to_end_equals_the_known_bucket_routing_when_the_text_names_the_bucket(tmp_path: Path) -> None:
    run, informative, _ = specialty_run(tmp_path)
    row_ = end_to_end(load_runs([run]).table, None, PARAMS, informative, k=5, seed=0, rounds=200)["families"][
        "specialty"
    ]
    assert row_["evaluated"] == 180 and row_["classifier_accuracy"]["bucket"] >= 0.95
    assert row_["same_model_as_known"] >= 0.95
    assert row_["end_to_end"]["value"] >= row_["known_bucket"]["value"] - 0.02
    assert row_["end_to_end"]["value"] > row_["default"]["value"] + 0.1


@pytest.mark.parametrize("seed", [0, 1, 4])
def test_where_the_classifier_is_useless_the_fallback_keeps_the_default_models_score(tmp_path: Path, seed: int) -> None:
    run, _, useless = specialty_run(tmp_path, seed)
    row_ = end_to_end(load_runs([run]).table, None, PARAMS, useless, k=5, seed=seed, rounds=200)["families"][
        "specialty"
    ]
    assert row_["classifier_accuracy"]["bucket"] < 0.35  # guessing among six domains
    # a few items a fold's thresholds trusted by luck may cost a point or two, never more
    assert row_["end_to_end"]["value"] >= row_["default"]["value"] - 0.02
    assert row_["end_to_end"]["value"] < row_["known_bucket"]["value"]  # what not knowing the bucket costs
    assert row_["route_by"].get("bucket", 0) <= 0.1 * row_["evaluated"]


def test_metrics_escape_label_values_and_count_errors() -> None:
    metrics = Metrics()
    metrics.request('specialty/domain/a"b\\c', "m\nx", "hint", 502, 0.5, 0.4)
    metrics.request("exam/task/T1", "card", "classifier", 200, 0.01, 0.0095)
    text = metrics.render("abc")
    assert 'bucket="specialty/domain/a\\"b\\\\c",model="m\\nx",by="hint",status="502"} 1' in text
    assert 'medpool_router_errors_total{bucket="specialty/domain/a\\"b\\\\c",model="m\\nx",status="502"} 1' in text
    assert "medpool_router_overhead_seconds_count 2" in text and 'medpool_router_manifest_info{sha256="abc"} 1' in text
