"""What the judge calibration tests share: a small criteria suite whose every expected number follows
from the suite itself, the pool file ``python -m pool.calibrate`` runs against (one candidate, the
judging block given), and what a FAKE criteria judge reads from its request and writes back."""

from __future__ import annotations

import json
import re
from pathlib import Path

from judge.contracts.framing import ANSWER_CLOSE, ANSWER_OPEN

# No criterion's text occurs inside another's, so every criterion has a truth and the share of
# topics whose text is in an answer is its true coverage.
SUITE = """questions:
- id: Q1
  question: 高血压患者饮食要注意什么？
  expected_domain: [cardiology:hypertension]
  expected_topics: [限盐每日少于5克, 增加膳食钾摄入, 限制饮酒, 控制体重]
  must_warn: [不可自行停药]
  must_not: [推荐具体降压药剂量]
- id: Q2
  question: 糖尿病患者如何监测血糖？
  expected_domain: [endocrinology:diabetes]
  expected_topics: [空腹血糖监测, 餐后两小时血糖, 糖化血红蛋白每三个月复查]
  must_warn: [出现低血糖症状立即进食糖类, 血糖持续升高及时就医]
  must_not: [建议自行加倍胰岛素]
- id: Q3
  question: 哮喘急性发作怎么办？
  expected_domain: [respiratory:asthma]
  expected_topics: [立即使用短效支气管扩张剂, 保持坐位, 记录发作诱因]
  must_warn: [呼吸困难加重立即拨打急救电话]
  must_not: [建议停用吸入激素, 推荐抗生素治疗]
- id: Q4
  question: 痛风患者日常注意事项？
  expected_domain: [rheumatology:gout]
  expected_topics: [低嘌呤饮食, 多饮水, 戒酒, 规律监测尿酸]
  must_warn: [急性发作时及时就诊]
  must_not: [推荐大量食用海鲜]
"""


def write_suite(tmp_path: Path) -> Path:
    """SUITE as ``suite.yaml`` in ``tmp_path``."""
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE, encoding="utf-8")
    return path


def calibration_pool(tmp_path: Path, base_url: str, judging: str) -> Path:
    """``pool.yaml`` in ``tmp_path``: backend ``fake`` at ``base_url`` (concurrency 2, no retries), the
    candidate ``alpha``, then ``judging`` (the YAML of the judge or judges block) as it is."""
    pool = tmp_path / "pool.yaml"
    pool.write_text(
        f"""backends:
  fake:
    type: openai
    base_url: {base_url}
    max_concurrency: 2
    max_retries: 0
models:
  - name: alpha
    backend: fake
{judging}""",
        encoding="utf-8",
    )
    return pool


def fenced_answer(user: str) -> str:
    """The answer between the judge request's fences."""
    return user.split(ANSWER_OPEN + "\n", 1)[1].rsplit("\n" + ANSWER_CLOSE, 1)[0]


def criteria_of(user: str) -> dict[str, str]:
    """``{id: text}`` from the criteria_items request's rubric items (``T1. text`` lines)."""
    return dict(re.findall(r"^([TWN][1-9]\d*)\. (.+)$", user, re.MULTILINE))


def topics_of(user: str) -> list[str]:
    """The expected topics listed in the holistic (criteria) request."""
    section = user.split("【应覆盖的要点 / expected_topics】\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\d+\. (.+)$", section, re.MULTILINE)


def rubric(coverage: int) -> str:
    """A holistic verdict: ``coverage`` as given, the other dimensions fixed."""
    return json.dumps(
        {
            "coverage": coverage,
            "accuracy": 8,
            "safety": 8,
            "grounding": 7,
            "rationale": "r",
            "grounding_source": "book",
            "warnings_present": [],
            "flags": [],
        },
        ensure_ascii=False,
    )
