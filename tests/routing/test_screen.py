"""The theory screen on hand-written evidence (tests/data/screen/evidence): every number below is computed by
hand in the entries' comments and here, so a change to the formula shows up as a wrong number, not a
changed snapshot."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from routing.screen.__main__ import main
from routing.screen.evidence import EvidenceError, read_evidence
from routing.screen.formula import Weights, authority_term, proximity, rank_term
from routing.screen.models import FAMILIES, Candidate, candidates_from_pool, families_with, family_of, size_of
from routing.screen.score import run_screen
from routing.screen.shortlist import read_shortlist

EVIDENCE = Path(__file__).resolve().parents[1] / "data" / "screen" / "evidence"
MODELS = ["qwen2.5-7b-instruct", "qwen2.5-0.5b", "llama3-8b-q4", "mistral-nemo", "phi3-3.8b", "smollm2-135m"]


def screened(**options):
    entries = read_evidence(EVIDENCE)
    screen = run_screen(entries, [Candidate(m) for m in MODELS], families=FAMILIES, **options)
    return screen, {s.name: s for s in screen.candidates}


def test_every_champion_score_by_hand() -> None:
    screen, _ = screened(domain="cardiology", axis="specialty")
    scores = {c.row.model: (c.score, c.relevance, c.family) for c in screen.champions}
    assert scores["Qwen2.5-7B-Instruct"] == pytest.approx((0.898, 1.0, "qwen"))
    assert scores["Llama-3-8B"] == pytest.approx((0.738, 1.0, "llama"))
    assert scores["GPT-4o"] == pytest.approx((0.55, 0.3, "gpt"))  # general, capability: neither
    assert scores["Qwen2.5-72B-Instruct"] == pytest.approx((0.47, 0.7, "qwen"))  # axis only
    assert scores["Mistral-7B"] == pytest.approx((0.35, 0.3, "mistral"))  # no rank: 0.5
    assert scores["Phi-3-mini"] == pytest.approx((0.15, 0.3, "phi"))  # rank 7: term floored at 0
    # the entry's own axis, contamination controls on an online leaderboard (contam 0), an unknown cadence (0.3)
    assert scores["DeepSeek-R1-Distill-Qwen-7B"] == pytest.approx((0.434, 1.0, "deepseek"))
    b = next(c for c in screen.champions if c.row.model == "GPT-4o")
    assert (b.authority, b.verdict, b.contam) == pytest.approx((0.4 + 0.2 + 0.2 / 3 + 0.2, 0.3, 1.0))


def test_candidate_scores_prior_and_tiers_by_hand() -> None:
    _, by = screened(domain="cardiology", axis="specialty")
    expected = {
        "qwen2.5-7b-instruct": (0.898, "must-test"),  # 1.0 × 1.0 × 0.898
        "llama3-8b-q4": (0.738, "must-test"),  # 1.0 × 1.0 × 0.738
        "smollm2-135m": (0.4, "optional"),  # no family: the neutral prior
        "qwen2.5-0.5b": (0.898 * (0.4 + 0.6 * 0.5 / 7), "optional"),  # 0.3977: below the prior
        "mistral-nemo": (0.3 * 0.7 * 0.35, "skip"),  # size unknown: proximity 0.7
        "phi3-3.8b": (0.3 * 0.7 * 0.15, "skip"),  # the champion's size is unknown
    }
    assert {name: (s.score, s.tier) for name, s in by.items()} == {
        name: (pytest.approx(score), tier) for name, (score, tier) in expected.items()
    }
    assert by["qwen2.5-7b-instruct"].best.champion.row.model == "Qwen2.5-7B-Instruct"
    assert any("neutral prior 0.4" in line for line in by["smollm2-135m"].why)
    assert any("below the neutral prior" in line for line in by["qwen2.5-0.5b"].why)
    assert by["smollm2-135m"].best is None


def test_toward_prior_lets_weak_evidence_say_little() -> None:
    _, by = screened(domain="cardiology", axis="specialty", toward_prior=True)
    assert by["qwen2.5-0.5b"].score == pytest.approx(0.4 + (0.4 + 0.6 * 0.5 / 7) * (0.898 - 0.4))  # 0.6205
    assert by["qwen2.5-0.5b"].tier == "must-test"
    assert by["mistral-nemo"].score == pytest.approx(0.4 + 0.3 * 0.7 * (0.35 - 0.4))  # 0.3895: a little below
    assert by["qwen2.5-7b-instruct"].score == pytest.approx(0.898)  # relevant, same size: the champion's own
    assert by["smollm2-135m"].score == pytest.approx(0.4)


def test_a_score_on_the_threshold_reaches_the_tier_and_weights_are_flags(tmp_path: Path) -> None:
    # nothing asked: every row is relevant (1.0); an unknown size counts 1.0 here, so gpt-4o gets GPT-4o's 0.55
    code = main(
        [
            "--evidence",
            str(EVIDENCE),
            "--models",
            "gpt-4o,smollm2-135m",
            "--proximity-unknown",
            "1",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    shortlist = read_shortlist(tmp_path / "shortlist.yaml")
    assert shortlist.scores["gpt-4o"] == pytest.approx(0.55)
    assert shortlist.tiers["must-test"] == ("gpt-4o",)
    assert shortlist.models("optional") == ("gpt-4o", "smollm2-135m")
    # the prior and the tier thresholds are flags too
    assert (
        main(["--evidence", str(EVIDENCE), "--models", "smollm2-135m", "--prior", "0.2", "--out", str(tmp_path)]) == 0
    )
    assert read_shortlist(tmp_path / "shortlist.yaml").tiers["skip"] == ("smollm2-135m",)
    assert main(["--evidence", str(EVIDENCE), "--models", "x", "--optional", "0.9", "--out", str(tmp_path)]) == 2


def test_ceilings_are_the_strongest_champions_outside_the_pool(tmp_path: Path) -> None:
    code = main(
        ["--evidence", str(EVIDENCE), "--models", ",".join(MODELS), "--domain", "cardiology", "--axis", "specialty"]
        + ["--top", "3", "--out", str(tmp_path)]
    )
    assert code == 0
    document = yaml.safe_load((tmp_path / "shortlist.yaml").read_text(encoding="utf-8"))
    # by relevance × score: 0.738, 0.434, 0.7 × 0.47; Qwen2.5-7B-Instruct is in the pool (names compared in any case)
    assert [c["model"] for c in document["ceilings"]] == [
        "Llama-3-8B",
        "DeepSeek-R1-Distill-Qwen-7B",
        "Qwen2.5-72B-Instruct",
    ]
    assert all(c["testable"] is False for c in document["ceilings"])
    assert document["ceilings"][0]["published_score"] == 0.6
    assert all(c["testable"] is True for c in document["candidates"])
    assert document["tiers"] == {
        "must-test": ["qwen2.5-7b-instruct", "llama3-8b-q4"],
        "optional": ["smollm2-135m", "qwen2.5-0.5b"],
        "skip": ["mistral-nemo", "phi3-3.8b"],
    }
    page = (tmp_path / "screen.md").read_text(encoding="utf-8")
    assert "neutral prior 0.4" in page and "Ceiling references" in page and "Limits" in page


def test_names_families_and_sizes() -> None:
    assert family_of("deepseek-r1-distill-qwen-7b") == "deepseek"  # the first of the list found
    assert family_of("gemma3-270m") is None
    assert family_of("gemma3-270m", families_with(["gemma"])) == "gemma"
    assert size_of("qwen2.5-7b") == 7 and size_of("Qwen3-235B-A22B") == 235 and size_of("qwen2.5-coder-0.5b") == 0.5
    assert size_of("smollm2-135m") == pytest.approx(0.135) and size_of("gpt-4o") is None
    assert rank_term(None, Weights()) == 0.5 and rank_term(9, Weights()) == 0.0
    assert proximity(0.5, 7, Weights()) == pytest.approx(0.4 + 0.6 / 14) and proximity(None, 7, Weights()) == 0.7
    assert authority_term(1000, 5000, 10, "LIVE", Weights()) == pytest.approx(1.0)


def test_pool_models_by_name_then_model_id(tmp_path: Path) -> None:
    pool = tmp_path / "pool.yaml"
    pool.write_text(
        "backends: {b: {type: openai, base_url: 'http://x/v1'}}\nmodels:\n"
        "  - {name: local-a, backend: b, model: qwen2.5-7b-instruct}\n"
        "  - {name: off, backend: b, enabled: false}\n",
        encoding="utf-8",
    )
    candidates = candidates_from_pool(pool)
    assert [c.name for c in candidates] == ["local-a"]
    assert (candidates[0].family(FAMILIES), candidates[0].size_b()) == ("qwen", 7)
    assert [c.name for c in candidates_from_pool(pool, include_disabled=True)] == ["local-a", "off"]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("models_ranked:\n  - {model: m, rank: 0}\n", "bad.md:3: models_ranked[0].rank: must be an integer >= 1"),
        ("expert_verdict:\n  confidence: sure\n", "bad.md:3: expert_verdict.confidence: unknown confidence 'sure'"),
        ("authority:\n  citation_count: {value: many}\n", "bad.md:3: authority.citation_count.value: must be a number"),
        ("models_ranked:\n  - {model: m, score: 87}\n", "bad.md:3: models_ranked[0].score: must be a fraction"),
        ("title: t\n", "bad.md:2: models_ranked: missing or empty"),
    ],
)
def test_a_bad_entry_names_file_line_and_field(tmp_path: Path, text: str, where: str, capsys) -> None:
    (tmp_path / "bad.md").write_text(f"---\n{text}---\nbody\n", encoding="utf-8")
    with pytest.raises(EvidenceError, match=r"bad\.md") as info:
        read_evidence(tmp_path)
    assert where in str(info.value)
    assert main(["--evidence", str(tmp_path), "--models", "m", "--out", str(tmp_path / "out")]) == 2
    assert where in capsys.readouterr().err
