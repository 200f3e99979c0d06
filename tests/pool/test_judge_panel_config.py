"""``judges:`` in the pool file: a panel of judges, its rule, and the errors a wrong panel gets."""

from __future__ import annotations

import pytest

from judge.panel import PANEL_RULES
from pool.config import PoolConfigError, parse_pool
from pool.config.schema import PanelRule

HEAD = """backends:
  srv: {type: openai, base_url: "http://127.0.0.1:9/v1"}
models:
  - {name: cand, backend: srv}
  - {name: qwen-judge, backend: srv, model: qwen2.5-7b, enabled: false}
  - {name: llama-judge, backend: srv, model: llama3-8b, enabled: false}
"""


def test_a_panel_resolves_every_member_in_file_order():
    config = parse_pool(
        HEAD
        + """judges:
  - model: qwen-judge
  - model: llama-judge
    temperature: 0.2
  - backend: srv
    model: glm-4
panel_rule: reliability
"""
    )
    members = config.judge_models()
    assert [m.name for m in members] == ["qwen-judge", "llama-judge", "judge-3"]
    assert members[1].temperature == 0.2 and members[2].model == "glm-4"
    assert config.judge_model() == members[0] and config.panel_rule == "reliability"


def test_the_panel_rules_are_the_judge_packages_rules():
    assert set(PanelRule.__args__) == set(PANEL_RULES)


def test_the_fingerprint_covers_every_member_and_the_rule():
    base = HEAD + "judges:\n  - model: qwen-judge\n  - model: llama-judge\n"
    one = parse_pool(base).fingerprint()
    assert parse_pool(base + "panel_rule: mean\n").fingerprint() != one
    assert parse_pool(base.replace("model: llama-judge\n", "model: llama-judge\n    seed: 3\n")).fingerprint() != one
    assert parse_pool(HEAD + "judge:\n  model: qwen-judge\n").fingerprint() != one


@pytest.mark.parametrize(
    ("tail", "needle"),
    [
        ("judge:\n  model: qwen-judge\njudges:\n  - model: qwen-judge\n  - model: llama-judge\n", "not both"),
        ("judges:\n  - model: qwen-judge\n", "at least 2"),
        ("judges:\n  - model: qwen-judge\n  - model: qwen-judge\n", "already judges[0]"),
        ("judges:\n  - model: qwen-judge\n  - model: lama-judge\n", "did you mean 'llama-judge'"),
        ("judge:\n  model: qwen-judge\npanel_rule: mean\n", "has no judges: list"),
        ("judges:\n  - model: qwen-judge\n  - model: llama-judge\npanel_rule: vote\n", "majority"),
    ],
)
def test_a_wrong_panel_is_named_with_its_line(tail, needle):
    with pytest.raises(PoolConfigError) as caught:
        parse_pool(HEAD + tail, "pool.yaml")
    text = str(caught.value)
    assert needle in text and "pool.yaml:" in text, text


def test_the_panel_identity_changes_with_any_member_or_the_rule():
    from eval.items import Item, Source
    from pool.score.identity import JudgeSetup
    from pool.score.panel import panel_identity

    item = Item(
        id="s/qa/1",
        suite="s",
        track="capability",
        task="qa",
        gold_type="reference",
        gold="参考",
        source=Source("s", 1),
        question="问？",
    )

    def key(text: str, rule: str = "majority") -> str:
        config = parse_pool(HEAD + text)
        setups = [JudgeSetup(m, m.backend, "http://127.0.0.1:9/v1", "openai") for m in config.judge_models()]
        return panel_identity(setups, rule, item).key()

    base = "judges:\n  - model: qwen-judge\n  - model: llama-judge\n"
    assert key(base) == key(base)
    assert key(base, "mean") != key(base)
    assert key(base.replace("llama-judge\n", "llama-judge\n    temperature: 0.7\n")) != key(base)
    assert key("judges:\n  - model: llama-judge\n  - model: qwen-judge\n") != key(base)
