"""llama-cpp-python's server (``engine: llama_cpp``) with token logprobs that keep memory bounded.

``python -m runners.llamacpp.single_server --config_file CONFIG.json`` is ``python -m llama_cpp.server``
with one change: its models are :class:`StepLogprobsLlama`. llama-cpp-python returns logprobs only
for a model built with ``logits_all``, which keeps ``n_ctx x n_vocab`` floats (1.2 GB for Qwen's
152k vocabulary at 2048 tokens) and computes the output layer for every prompt token; the manager
turns it off. Here a request that asks for logprobs (completion ``logprobs: k``, chat ``logprobs:
true, top_logprobs: k``) gets them from the one row of logits each sampled token is drawn from,
read at the moment it is sampled: the sampled token's log-probability and the k most likely tokens
(log-softmax of the model's own distribution, before the repeat penalty and a grammar, as in
:mod:`runners.llamacpp.batching`), so the memory is one row and k pairs per generated token. The
answer is the same either way, and a request that asks for none runs exactly as before. Streaming
requests get none (the managed backends never stream).

A token's text is what it adds to the answer (a token that ends inside a UTF-8 character adds
nothing, the one completing it adds the character), so the tokens spell the answer exactly; an
alternative's text is its own piece.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import llama_cpp
import numpy as np

Step = tuple[int, float, list[tuple[int, float]]]


class StepLogprobsLlama(llama_cpp.Llama):
    """``llama_cpp.Llama`` whose completions carry the sampled steps' logprobs when asked (module doc)."""

    _lp_top: int | None = None
    _lp_steps: list[Step]
    _lp_prompt: list[int]

    def _create_completion(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        k = kwargs.get("logprobs")
        if k is None or kwargs.get("stream"):
            kwargs["logprobs"] = None
            yield from super()._create_completion(*args, **kwargs)
            return
        kwargs["logprobs"] = None
        self._lp_top, self._lp_steps, self._lp_prompt = int(k), [], []
        try:
            chunks = list(super()._create_completion(*args, **kwargs))
        finally:
            self._lp_top = None
        for chunk in chunks:
            choice = chunk["choices"][0]
            choice["logprobs"] = self._completion_logprobs(choice["text"], self._lp_steps)
            yield chunk

    def generate(self, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Iterator[int]:
        if self._lp_top is not None:
            self._lp_prompt = list(tokens)
        yield from super().generate(tokens, *args, **kwargs)

    def sample(self, *args: Any, **kwargs: Any) -> int:
        token = super().sample(*args, **kwargs)
        if self._lp_top is not None:
            idx = kwargs.get("idx")
            self._lp_steps.append(self._step(-1 if idx is None else idx - self.n_tokens, token, self._lp_top))
        return token

    def _step(self, ridx: int, token: int, k: int) -> Step:
        """The sampled token's log-probability and the ``k`` most likely tokens' at logits row ``ridx``."""
        n_vocab = self.n_vocab()
        row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self._ctx.ctx, ridx), shape=(n_vocab,))
        peak = float(row.max())
        log_total = peak + float(np.log(np.exp(row - peak, dtype=np.float64).sum()))
        top: list[tuple[int, float]] = []
        if k > 0:
            ids = np.argpartition(row, -k)[-k:] if k < n_vocab else np.arange(n_vocab)
            ids = ids[np.argsort(-row[ids], kind="stable")]
            top = [(int(i), float(row[i]) - log_total) for i in ids]
        return token, float(row[token]) - log_total, top

    def _piece(self, token: int) -> str:
        buf = ctypes.create_string_buffer(256)
        n = llama_cpp.llama_token_to_piece(self._model.vocab, token, buf, len(buf), 0, False)
        return buf.raw[: max(n, 0)].decode("utf-8", "replace")

    def _completion_logprobs(self, text: str, steps: Sequence[Step]) -> dict[str, Any]:
        """The steps in OpenAI's completion shape (the chat handler turns it into the chat shape)."""
        tokens: list[str] = []
        values: list[float] = []
        tops: list[dict[str, float]] = []
        offsets: list[int] = []
        ids: list[int] = []
        spelled = 0
        for token, logprob, top in steps:
            if spelled >= len(text) or llama_cpp.llama_vocab_is_eog(self._model.vocab, token):
                break
            ids.append(token)
            now = self.detokenize(ids, prev_tokens=self._lp_prompt).decode("utf-8", "ignore")
            piece = text[spelled : min(len(now), len(text))]
            offsets.append(spelled)
            spelled += len(piece)
            tokens.append(piece)
            values.append(logprob)
            alternatives: dict[str, float] = {}
            for t, lp in top:
                alternatives.setdefault(self._piece(t), lp)
            tops.append(alternatives)
        return {"tokens": tokens, "text_offset": offsets, "token_logprobs": values, "top_logprobs": tops}


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m llama_cpp.server`` (its own arguments) with :class:`StepLogprobsLlama` models."""
    from llama_cpp.server import __main__ as server_main

    llama_cpp.Llama = StepLogprobsLlama  # type: ignore[misc]  # the server builds models from this name
    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    server_main.main()


if __name__ == "__main__":
    main()
