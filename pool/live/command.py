"""A command as a reference agent: the :class:`~runners.base.Runner` of ``reference_agent: {argv: [...]}``.

Each question runs the command once, without a shell: every ``{question}`` and ``{mode}`` inside an
argument is replaced (in one pass, so a question that contains ``{mode}`` is passed as written), stdin
is empty, stdout is the answer (UTF-8, decoration lines stripped: :func:`pool.live.agent.strip_decoration`)
and stderr is the agent's own log, of which only the last line is kept, in a failure's detail.

A command that fails is a failed call, recorded like a server's, never a candidate's zero:

=====================================  ===============  ===========================================
what happened                          ``error_class``  detail
=====================================  ===============  ===========================================
it cannot be started (no such file)    ``client_error`` the OS's reason
it ran past ``timeout_s``              ``timeout``      it is stopped with its whole process group
non-zero exit status                   ``server_error`` the status and stderr's last line
nothing left once decoration is gone   ``bad_response`` "empty answer"
=====================================  ===============  ===========================================

The command runs in a session (process group) of its own, so a timeout or a cancelled run stops the
children it started too (``ask.sh`` starting Python or curl); a run killed with SIGKILL cannot stop it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections.abc import Sequence

from pool.live.agent import strip_decoration
from runners.base import Attempt, ErrorClass, GenerationRequest, GenerationResponse

_PLACEHOLDER = re.compile(r"\{(question|mode)\}")
STDERR_KEPT_CHARS = 300


def command_line(argv: Sequence[str], question: str, mode: str) -> list[str]:
    """``argv`` with ``{question}`` and ``{mode}`` replaced in one pass (see the module docstring)."""
    values = {"question": question, "mode": mode}
    return [_PLACEHOLDER.sub(lambda m: values[m.group(1)], arg) for arg in argv]


class CommandRunner:
    """Runs ``argv`` for each request's question (its last user message) in ``mode``."""

    def __init__(self, argv: Sequence[str], mode: str, timeout_s: float) -> None:
        self.argv, self.mode, self.timeout_s = tuple(argv), mode, timeout_s

    async def generate(self, request: GenerationRequest) -> GenerationResponse:
        question = request.messages[-1]["content"]
        args = command_line(self.argv, question, self.mode)
        started = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                *args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            return _failed("client_error", f"cannot run {args[0]!r}: {exc.strerror or exc}", started)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self.timeout_s)
        except TimeoutError:
            await _stop(proc)
            return _failed("timeout", f"no answer within {self.timeout_s:g} s (the command was stopped)", started)
        except asyncio.CancelledError:
            await _stop(proc)
            raise
        if proc.returncode != 0:
            said = err.decode("utf-8", errors="replace").strip().splitlines()
            tail = f": {said[-1][-STDERR_KEPT_CHARS:]}" if said else ""
            return _failed("server_error", f"exit status {proc.returncode}{tail}", started)
        text = strip_decoration(out.decode("utf-8", errors="replace"))
        if not text:
            return _failed("bad_response", "empty answer (nothing left once decoration lines are stripped)", started)
        latency = time.monotonic() - started
        return GenerationResponse(
            text=text,
            finish_reason="stop",
            prompt_tokens=None,
            completion_tokens=None,
            latency_s=latency,
            attempts=(Attempt(1, None, None, latency),),
        )

    async def aclose(self) -> None:
        return None


def _failed(error_class: ErrorClass, detail: str, started: float) -> GenerationResponse:
    latency = time.monotonic() - started
    return GenerationResponse(
        text="",
        finish_reason=None,
        prompt_tokens=None,
        completion_tokens=None,
        latency_s=latency,
        attempts=(Attempt(1, None, error_class, latency, detail),),
        error_class=error_class,
        error_detail=detail,
    )


async def _stop(proc: asyncio.subprocess.Process) -> None:
    """Stop the command and every process it started (its process group), and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError):
        await proc.wait()
