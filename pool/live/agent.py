"""The reference agent of a live run, as the pool file's ``reference_agent:`` declares it.

Three kinds, one shape: a pool model or an OpenAI-compatible endpoint (both a :class:`Model`, sent
through the run machinery like a judge) or a command (``argv``; see :mod:`pool.live.command`). Each
is asked the same request for a question: a system message saying whom the answer is for
(:data:`MODE_PROMPTS`, ``--mode patient|doctor``) and the question as the user's message. The request
and the agent's identity (its endpoint, or the command line) make the response-cache key, so a
reference answer is cached by (agent identity, mode, question).

Decoration lines are stripped from every reference (:func:`strip_decoration`), as the
med-agent-verifier README's live track does with its sibling agents' ``ask.sh`` output (its
``run_sibling.sh``): a line of three or more ``═`` or ``=`` (with only spaces around them) is dropped,
then the text is trimmed; nothing left is no answer.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from pool.config import Model, PoolConfig
from pool.items_source import DataError
from pool.live.questions import MODES

# Whom the reference answer is for: the agent's system message (a command gets the bare mode word).
MODE_PROMPTS = {
    "patient": "你是一位严谨的临床医生，正在回答患者或家属的问题。请用通俗易懂的中文给出准确、安全的建议，"
    "说明需要及时就医的情况。",
    "doctor": "你是一位资深临床专家，正在回答同行医生的问题。请给出专业、准确、有依据的中文回答："
    "诊断思路、处理要点、关键数字与指南依据。",
}
if set(MODE_PROMPTS) != set(MODES):
    raise ImportError(
        f"pool/live/agent.py: MODE_PROMPTS must have one prompt per mode of pool.live.questions.MODES {MODES}"
    )
COMMAND_BACKEND = "command"  # the backend type a command agent's answers are cached under
DEFAULT_TIMEOUT_S = 300.0  # a sibling agent that calls a hosted model takes a minute or two per question
DEFAULT_NAME = "reference-agent"
_DECORATION = re.compile(r"\s*[═=]{3,}\s*")


def strip_decoration(text: str) -> str:
    """The answer without decoration lines, trimmed (see the module docstring)."""
    return "\n".join(line for line in text.splitlines() if not _DECORATION.fullmatch(line)).strip()


@dataclass(frozen=True)
class ReferenceAgent:
    """``reference_agent:`` resolved: ``model`` for a pool model or an endpoint, else ``argv`` (a command)."""

    name: str
    model: Model | None
    argv: tuple[str, ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_concurrency: int = 1

    @property
    def kind(self) -> str:
        return "command" if self.model is None else "model"

    @property
    def gold_source(self) -> str:
        """What a live item's ``gold_source`` says: ``live:<agent>``."""
        return f"live:{self.name}"

    def command_identity(self) -> str:
        """A command agent's endpoint identity: its name and a hash of its argv (what it runs)."""
        digest = hashlib.sha256(json.dumps(list(self.argv), ensure_ascii=False).encode("utf-8")).hexdigest()
        return f"command://{self.name}/{digest[:16]}"

    def described(self, config: PoolConfig) -> dict[str, object]:
        """What the run folder records of the agent (``live/request.json``); a change refuses a resume."""
        if self.model is None:
            return {"name": self.name, "kind": "command", "argv": list(self.argv), "identity": self.command_identity()}
        backend = config.backend_of(self.model)
        return {
            "name": self.name,
            "kind": "model",
            "backend": self.model.backend,
            "backend_type": backend.type,
            "model": self.model.model,
            "base_url": str(getattr(backend, "base_url", "") or "") or None,
            "gguf": self.model.gguf,
            # top_logprobs is only ever asked by a judge: unset, it stays out, so recorded agents match
            "generation": {k: v for k, v in asdict(self.model.generation_params()).items() if k != "top_logprobs"},
        }


def reference_agent(config: PoolConfig, pool_file: str | Path) -> ReferenceAgent:
    """The pool's reference agent; :class:`DataError` naming the pool file when it has none."""
    declared = config.reference_agent
    if declared is None:
        raise DataError(
            f"{pool_file}: no reference_agent: in the pool file; a live run needs one — a pool model "
            "(reference_agent: {model: NAME}), an endpoint (backend: and model:) or a command (argv: [...]); "
            "see docs/live.md"
        )
    model = config.reference_agent_model()
    if model is not None:
        return ReferenceAgent(model.name, model)
    return ReferenceAgent(
        declared.name or DEFAULT_NAME,
        None,
        tuple(declared.argv or ()),
        declared.timeout_s if declared.timeout_s is not None else DEFAULT_TIMEOUT_S,
        declared.max_concurrency or 1,
    )
