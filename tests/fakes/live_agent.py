"""FAKES for live runs: a reference agent (as an OpenAI-compatible model and as a command), candidates of
known agreement with it, and a judge that scores exactly that agreement.

The agent's answer to a question is :func:`reference_for` — a fixed set of numbered points picked by a
hash of the question and the mode, between decoration lines as ``ask.sh`` prints them. A candidate of
agreement ``a`` answers the first ``round(a · points)`` of those points and pads the rest with filler of
the same length (so no answer is short enough for the short-answer guard). The judge finds the points
of the reference block in the answer block and scores coverage = accuracy = grounding = 10 × the share
found, safety 10: its total orders the candidates exactly by their agreement.

As a command (the agent a pool file declares with ``argv:``)::

    python -m tests.fakes.live_agent QUESTION --mode patient [--calls FILE] [--fail-on TEXT]
        [--hold-on TEXT --release FILE]

prints the decorated reference on stdout and noise on stderr; ``--calls`` appends one line per call
(``mode<TAB>question``) as the call starts; ``--fail-on`` exits 3 for a question containing TEXT;
``--hold-on`` waits, for a question containing TEXT, until FILE exists (without ``--release``: two minutes,
past any test's timeout), so a run is killed, or times the agent out, in a known state.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import Behavior, ok, server_error

POINTS = (
    "限制食盐摄入每日不超过五克",
    "增加新鲜蔬菜水果与膳食钾",
    "戒烟限酒并规律作息",
    "每周至少一百五十分钟中等强度运动",
    "控制体重使体重指数达标",
    "遵医嘱长期规律服药不可自行停药",
    "定期监测并记录血压血糖",
    "出现胸痛呼吸困难立即就医",
    "复诊时带上既往检查结果",
    "保持情绪稳定避免过度劳累",
)
PER_ANSWER = 6
FILLER = "请结合自身情况咨询医生。"
DECORATION = "═" * 24
AGENT, JUDGE = "ref-agent", "judgey"


def reference_for(question: str, mode: str) -> str:
    """The agent's (undecorated) answer: ``PER_ANSWER`` numbered points chosen by the question and mode."""
    start = int(hashlib.sha256(f"{mode}\n{question}".encode()).hexdigest(), 16) % len(POINTS)
    points = [POINTS[(start + k) % len(POINTS)] for k in range(PER_ANSWER)]
    return f"（{mode}）" + "；".join(f"{k + 1}. {p}" for k, p in enumerate(points)) + "。"


def decorated(text: str) -> str:
    """As ``ask.sh`` prints an answer: between decoration lines (stripped by the live run)."""
    return f"{DECORATION}\n{text}\n{DECORATION}\n"


def points_of(text: str) -> list[str]:
    return [p for p in POINTS if p in text]


def candidate_answer(reference: str, agreement: float) -> str:
    """An answer holding the first ``round(agreement · points)`` points of ``reference``, padded to its length."""
    points = points_of(reference)
    kept = "；".join(points[: round(agreement * len(points))])
    padding = FILLER * (1 + len(reference) // len(FILLER))
    return (kept + "。" + padding)[: max(len(reference), len(kept) + 1) + len(FILLER)]


def _block(prompt: str, start: str, end: str) -> str:
    match = re.search(re.escape(start) + r"\n(.*?)\n" + re.escape(end), prompt, re.S)
    return match.group(1) if match else ""


class LiveWorld:
    """``behave`` for :class:`tests.fakes.openai_fake.FakeOpenAIServer` (see the module docstring): model
    ``agent`` answers as the reference agent (failing with a 500 for a question containing ``fail_on``),
    the models of ``agreement`` as candidates, model ``judge`` as the agreement judge. Counts the agent's
    calls per question (``agent_calls``)."""

    def __init__(self, agreement: Mapping[str, float], *, agent: str = AGENT, judge: str = JUDGE, fail_on: str = ""):
        self.agreement, self.agent, self.judge, self.fail_on = dict(agreement), agent, judge, fail_on
        self.agent_calls: Counter[str] = Counter()

    def __call__(self, index: int, payload: dict[str, Any]) -> Behavior:
        messages = payload.get("messages") or []
        model = payload.get("model")
        if model == self.judge:
            return ok(self.verdict("\n".join(str(m.get("content", "")) for m in messages)))
        question = str(messages[-1].get("content", "")) if messages else ""
        if model == self.agent:
            self.agent_calls[question] += 1
            if self.fail_on and self.fail_on in question:
                return server_error(500)
            mode = "doctor" if "同行医生" in str(messages[0].get("content", "")) else "patient"
            return ok(decorated(reference_for(question, mode)))
        return ok(self.candidate(str(model), question))

    def candidate(self, model: str, question: str) -> str:
        """Candidates answer as if they knew the agent's patient-mode reference."""
        return candidate_answer(reference_for(question, "patient"), self.agreement.get(model, 0.0))

    @staticmethod
    def verdict(prompt: str) -> str:
        reference = points_of(_block(prompt, "<<<REFERENCE>>>", "<<<END REFERENCE>>>"))
        answer = _block(prompt, "<<<ANSWER>>>", "<<<END ANSWER>>>")
        share = sum(p in answer for p in reference) / len(reference) if reference else 0.0
        score = round(10 * share)
        return json.dumps(
            {
                "coverage": score,
                "accuracy": score,
                "safety": 10,
                "grounding": score,
                "rationale": f"{round(100 * share)}% of the reference's points",
                "grounding_source": "guideline",
                "warnings_present": [],
                "flags": [],
            },
            ensure_ascii=False,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description="A FAKE reference agent command (see tests/fakes/live_agent.py).")
    parser.add_argument("question")
    parser.add_argument("--mode", default="patient")
    parser.add_argument("--calls", type=Path, help="append one line per call to this file")
    parser.add_argument("--fail-on", default="", help="exit 3 for a question containing this text")
    parser.add_argument("--hold-on", default="", help="for a question containing this text, wait for --release")
    parser.add_argument("--release", type=Path, help="the file whose existence ends a hold")
    args = parser.parse_args()
    if args.calls is not None:
        with args.calls.open("a", encoding="utf-8") as calls:
            calls.write(f"{args.mode}\t{args.question}\n")
    print("fake agent: thinking", file=sys.stderr)
    if args.hold_on and args.hold_on in args.question:
        deadline = time.monotonic() + 120
        while (args.release is None or not args.release.exists()) and time.monotonic() < deadline:
            time.sleep(0.05)
    if args.fail_on and args.fail_on in args.question:
        print("fake agent: upstream model unavailable", file=sys.stderr)
        return 3
    sys.stdout.write(decorated(reference_for(args.question, args.mode)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
