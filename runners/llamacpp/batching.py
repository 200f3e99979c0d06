"""Continuous batching for GGUF models on CPU: the requests in flight share each decode step.

Why: decoding one token of a small model on a CPU core is bound by memory bandwidth, since the
weights are read once per step however many sequences the step carries. On this project's 2-core
machine Qwen2.5-0.5B decodes 43 tokens/s with 4 sequences in one 2-thread context against
2 x 12.4 for two 1-thread single-request servers (1.7x). llama-cpp-python's server answers one
request at a time, so :class:`BatchedModel` drives llama.cpp's C API itself.

One model, one context, ``slots`` sequences (each with ``n_ctx`` positions of its own), as the
backend's :class:`~runners.llamacpp.settings.LlamaCppSettings` say. Each
:meth:`BatchedModel.step` builds one batch: the pending token of every generating slot plus as
much of the waiting prompts as fits in ``n_batch``, so a new request starts without stalling the
others. A freed slot keeps its tokens in the KV cache; a new request goes to the free slot sharing
the longest prefix with it, or copies a longer one from a busy slot (or waits for a slot still
reading it), so a judge's fixed instructions are read about once, not once per request or slot.

Behaviour follows llama-cpp-python's server, so switching engines changes speed, not semantics:
a fresh sampler chain per request (repeat penalty over the last 64 generated tokens, default 1.1;
greedy at temperature 0, else top-k, typical, top-p, min-p, temperature, seeded draw); chat
prompts rendered with the GGUF's own Jinja template with special tokens parsed and no extra BOS;
completion prompts with BOS; a request's GBNF ``grammar`` (constrained decoding: a judge's verdict
schema, ``runners.structured``) masks every token it does not allow, after the repeat penalty and
before the draw, as llama-cpp-python's sampler chain places it; generation ends at an
end-of-generation token, a stop string (the text is cut before it), ``max_tokens`` or the slot's
context (the last two: ``"length"``).

Numerics: a sequence's logits can change in the last bits with the shape of the batch it shares,
so a greedy answer may differ from a single-request server's, as prefix reuse already makes it.
With ``deterministic`` set, each step carries one request only (the slots take turns, a prompt is
read in the same ``n_batch`` chunks as when it is alone) and no prefix is reused, so a greedy answer
is the one the request gets alone on a fresh model, whatever else is in flight: batch-invariant,
at the price of the shared decode step (bench/README.md, "llamacpp.deterministic").

Token logprobs: a request with ``top_logprobs`` (a judge weighing its scores) gets, for every
generated token, its log-probability and the ``top_logprobs`` most likely tokens at its position,
from that step's logits (log-softmax of the model's own distribution, before the repeat penalty and
grammar; numpy over one row of ``n_vocab`` floats, read only for the sampled position). A token's text
is what it adds to the answer (a token that ends inside a UTF-8 character adds nothing, the one
completing it adds the character), so the tokens spell the answer exactly; an alternative's text is
its own piece.

Threading: one thread owns every model (:meth:`step`); :meth:`submit` and :meth:`cancel` may be
called from any thread.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import llama_cpp as llama
import numpy as np

from runners.llamacpp.settings import LlamaCppSettings

N_BATCH = 512  # tokens one decode step carries at most (llama-cpp-python's n_batch)
LAST_N_PENALISED = 64  # llama-cpp-python's last_n_tokens_size
# A prefix another slot holds (or is reading) is copied (or waited for) only when it saves reading
# more than this many tokens; below it, reading them again is as cheap as the copy.
SHARE_MIN_TOKENS = 64
DEFAULT_SEED = 0xFFFFFFFF  # llama.cpp's "random seed" value


class PromptTooLong(ValueError):
    """The prompt does not fit in one slot's context."""


@dataclass(frozen=True)
class Sampling:
    """llama-cpp-python server defaults, field for field."""

    temperature: float = 0.8
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    typical_p: float = 1.0
    repeat_penalty: float = 1.1
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    seed: int | None = None


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str  # "stop" or "length"
    prompt_tokens: int
    completion_tokens: int
    prompt_tokens_evaluated: int  # the rest came from the slot's cache
    prompt_ms: float  # wall time of the steps that read this prompt (shared with other requests)
    predicted_ms: float  # wall time of the steps that generated this answer
    # Per generated token when the job asked: (text it adds, logprob, ((alternative, logprob), ...)).
    logprobs: tuple[tuple[str, float, tuple[tuple[str, float], ...]], ...] | None = None


Done = Callable[[Completion | BaseException], None]


@dataclass(eq=False)
class Job:
    prompt: list[int]
    max_tokens: int
    sampling: Sampling
    stop: tuple[str, ...]
    done: Done
    cancelled: bool = False
    grammar: str | None = None  # GBNF, root rule ``root``; checked by :meth:`BatchedModel.submit`
    top_logprobs: int | None = None  # alternatives per generated token to return (module doc); None: no logprobs


@dataclass(eq=False)
class _Slot:
    seq_id: int
    cached: list[int] = field(default_factory=list)  # exactly the tokens in this sequence's KV cache
    job: Job | None = None
    to_read: list[int] = field(default_factory=list)  # prompt tokens not yet in the cache
    evaluated: int = 0
    sampler: Any = None
    next_token: int | None = None  # sampled, not yet fed
    generated: int = 0
    multibyte_fix: int = 0  # tokens still exempt from the stop and length checks (see _accept)
    text_bytes: bytearray = field(default_factory=bytearray)
    # job.top_logprobs: (token, logprob, top ids and logprobs) per step, the sampled one included
    logprobs: list[tuple[int, float, list[tuple[int, float]]]] = field(default_factory=list)
    prompt_ms: float = 0.0
    predicted_ms: float = 0.0


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class BatchedModel:
    """One GGUF model served to ``settings.slots`` concurrent requests (see the module doc)."""

    def __init__(self, path: str, settings: LlamaCppSettings) -> None:
        slots, n_ctx, n_threads, n_batch = settings.slots, settings.n_ctx, settings.threads, N_BATCH
        if slots < 1 or n_ctx < 8 or n_batch < slots:
            raise ValueError(f"need slots >= 1, n_ctx >= 8, n_batch >= slots; got {slots}, {n_ctx}, {n_batch}")
        llama.llama_backend_init()
        model_params = llama.llama_model_default_params()
        model_params.n_gpu_layers = 0
        self._model = llama.llama_model_load_from_file(path.encode(), model_params)
        if not self._model:
            raise ValueError(f"llama.cpp could not load {path}")
        self._vocab = llama.llama_model_get_vocab(self._model)
        ctx_params = llama.llama_context_default_params()
        ctx_params.n_ctx = n_ctx * slots
        ctx_params.n_seq_max = slots
        ctx_params.n_batch = ctx_params.n_ubatch = n_batch
        ctx_params.n_threads = ctx_params.n_threads_batch = n_threads
        # llama-cpp-python turns flash attention off; "auto" (llama.cpp's default) turns it on for
        # the CPU, and the different sums change greedy answers.
        ctx_params.flash_attn_type = llama.LLAMA_FLASH_ATTN_TYPE_DISABLED
        # One KV buffer per slot (not unified): measured on a judge-like load (20 requests sharing a
        # 900-token system prompt, Qwen2.5-0.5B, 4 slots), a unified buffer whose slots share that
        # prefix read 24% fewer prompt tokens but took 22% longer, since every token then attends
        # over every slot's cells.
        ctx_params.kv_unified = False
        self._ctx = llama.llama_init_from_model(self._model, ctx_params)
        if not self._ctx:
            llama.llama_model_free(self._model)
            raise ValueError(f"llama.cpp could not create a context for {path}")
        self._memory = llama.llama_get_memory(self._ctx)
        self._batch = llama.llama_batch_init(n_batch, 0, 1)
        self.n_ctx = n_ctx
        self.n_batch = n_batch
        self.n_vocab = llama.llama_vocab_n_tokens(self._vocab)
        self._slots = [_Slot(seq_id=i) for i in range(slots)]
        self.deterministic = settings.deterministic
        self._turn = 0  # deterministic: the slot the next step looks at first
        self._waiting: deque[Job] = deque()
        self._lock = threading.Lock()
        self._piece = ctypes.create_string_buffer(256)

    # --- text <-> tokens -----------------------------------------------------------------------

    def metadata(self, key: str) -> str | None:
        buf = ctypes.create_string_buffer(1 << 16)
        n = llama.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        if n < 0:
            return None
        if n >= len(buf):
            buf = ctypes.create_string_buffer(n + 1)
            llama.llama_model_meta_val_str(self._model, key.encode(), buf, len(buf))
        return buf.value.decode("utf-8", "replace")

    def token_text(self, token: int) -> str:
        if token < 0:
            return ""
        return llama.llama_vocab_get_text(self._vocab, token).decode("utf-8", "replace")

    @property
    def bos(self) -> int:
        return llama.llama_vocab_bos(self._vocab)

    @property
    def eos(self) -> int:
        return llama.llama_vocab_eos(self._vocab)

    def tokenize(self, text: str, *, add_special: bool) -> list[int]:
        data = text.encode("utf-8")
        capacity = len(data) + 8
        tokens = (llama.llama_token * capacity)()
        n = llama.llama_tokenize(self._vocab, data, len(data), tokens, capacity, add_special, True)
        if n < 0:
            capacity = -n
            tokens = (llama.llama_token * capacity)()
            n = llama.llama_tokenize(self._vocab, data, len(data), tokens, capacity, add_special, True)
        return list(tokens[:n])

    def _piece_bytes(self, token: int) -> bytes:
        n = llama.llama_token_to_piece(self._vocab, token, self._piece, len(self._piece), 0, False)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = llama.llama_token_to_piece(self._vocab, token, buf, len(buf), 0, False)
            return buf.raw[:n]
        return self._piece.raw[:n]

    # --- requests --------------------------------------------------------------------------------

    def submit(self, job: Job) -> None:
        """Queue ``job``; ``job.done`` is called from the stepping thread with a Completion or an error."""
        if len(job.prompt) >= self.n_ctx:
            raise PromptTooLong(f"the prompt has {len(job.prompt)} tokens; a slot's context is {self.n_ctx}")
        if not job.prompt:
            raise ValueError("empty prompt")
        if job.grammar is not None:
            checked = _grammar_sampler(self._vocab, job.grammar)
            if checked is None:
                raise ValueError("the grammar does not parse as GBNF with a root rule 'root'")
            llama.llama_sampler_free(checked)
        with self._lock:
            self._waiting.append(job)

    @property
    def has_work(self) -> bool:
        return bool(self._waiting) or any(s.job is not None for s in self._slots)

    def close(self) -> None:
        llama.llama_batch_free(self._batch)
        for slot in self._slots:
            if slot.sampler is not None:
                llama.llama_sampler_free(slot.sampler)
        llama.llama_free(self._ctx)
        llama.llama_model_free(self._model)

    def _admit(self) -> None:
        free = [s for s in self._slots if s.job is None]
        while free:
            with self._lock:
                if not self._waiting:
                    return
                job = self._waiting[0]
                if job.cancelled:
                    self._waiting.popleft()
                    continue
                prefix = {s: 0 if self.deterministic else _common_prefix(s.cached, job.prompt) for s in self._slots}
                slot = max(free, key=prefix.__getitem__)
                donor = max(self._slots, key=prefix.__getitem__)
                own, shared = prefix[slot], prefix[donor]
                if not self.deterministic and self._worth_waiting(job.prompt, max(own, shared)):
                    return  # another slot is reading this prompt's prefix: copy it when read
                self._waiting.popleft()
            free.remove(slot)
            if shared > own + SHARE_MIN_TOKENS:
                # Another slot holds a longer prefix: copy its cache (a whole-stream copy, the only
                # kind llama.cpp makes between sequences of separate buffers), then cut it back.
                llama.llama_memory_seq_cp(self._memory, donor.seq_id, slot.seq_id, -1, -1)
                slot.cached = donor.cached[:shared]
                own = shared
            keep = min(own, len(job.prompt) - 1)  # re-read >= 1 token (all of it when deterministic)
            llama.llama_memory_seq_rm(self._memory, slot.seq_id, keep, -1)
            del slot.cached[keep:]
            slot.job = job
            slot.to_read = job.prompt[keep:]
            slot.evaluated = len(slot.to_read)
            slot.sampler = _sampler_chain(job.sampling, self.n_vocab, _grammar_sampler(self._vocab, job.grammar))
            slot.next_token = None
            slot.generated = slot.multibyte_fix = 0
            slot.text_bytes = bytearray()
            slot.prompt_ms = slot.predicted_ms = 0.0

    def _worth_waiting(self, prompt: list[int], cached: int) -> bool:
        """True when a slot still reading its prompt will soon hold a much longer prefix of this one."""
        for slot in self._slots:
            if slot.job is not None and slot.to_read:
                coming = _common_prefix(slot.job.prompt, prompt)
                if coming > cached + SHARE_MIN_TOKENS:
                    return True
        return False

    def step(self) -> bool:
        """One llama_decode over every active slot; False when there was nothing to do."""
        self._admit()
        batch = self._batch
        outputs: list[tuple[_Slot, int]] = []  # slots that sample from this step, at batch index
        reading: list[_Slot] = []
        generating: list[_Slot] = []
        n = 0
        stepping = self._next_turn() if self.deterministic else self._slots
        for slot in stepping:  # pending tokens first: they always fit (n_batch >= slots)
            job = slot.job
            if job is None or slot.next_token is None:
                continue
            if job.cancelled or len(slot.cached) >= self.n_ctx:
                self._finish(slot, "length")
                continue
            _put(batch, n, slot.next_token, len(slot.cached), slot.seq_id, True)
            slot.cached.append(slot.next_token)
            outputs.append((slot, n))
            generating.append(slot)
            n += 1
        for slot in stepping:
            if slot.job is None or not slot.to_read or n >= self.n_batch:
                continue
            if slot.job.cancelled:
                self._finish(slot, "length")
                continue
            take = slot.to_read[: self.n_batch - n]
            del slot.to_read[: len(take)]
            for i, token in enumerate(take):
                last = not slot.to_read and i == len(take) - 1
                _put(batch, n, token, len(slot.cached), slot.seq_id, last)
                slot.cached.append(token)
                if last:
                    outputs.append((slot, n))
                n += 1
            reading.append(slot)
        if n == 0:
            return self.deterministic and self.has_work  # a turn's request was cancelled: next turn
        batch.n_tokens = n
        started = time.perf_counter()
        status = llama.llama_decode(self._ctx, batch)
        elapsed_ms = (time.perf_counter() - started) * 1000.0
        if status != 0:
            self.fail_all(RuntimeError(f"llama_decode returned {status}"))
            return True
        for slot in reading:
            slot.prompt_ms += elapsed_ms
        for slot in generating:
            slot.predicted_ms += elapsed_ms
        for slot, index in outputs:
            token = llama.llama_sampler_sample(slot.sampler, self._ctx, index)
            assert slot.job is not None
            if slot.job.top_logprobs is not None:
                slot.logprobs.append(self._logprobs(index, token, slot.job.top_logprobs))
            self._accept(slot, token)
        return True

    def _logprobs(self, index: int, token: int, k: int) -> tuple[int, float, list[tuple[int, float]]]:
        """``token``'s log-probability and the ``k`` most likely tokens' at batch output ``index`` (module doc)."""
        logits = np.ctypeslib.as_array(llama.llama_get_logits_ith(self._ctx, index), shape=(self.n_vocab,))
        peak = float(logits.max())
        log_total = peak + float(np.log(np.exp(logits - peak, dtype=np.float64).sum()))
        top: list[tuple[int, float]] = []
        if k > 0:
            ids = np.argpartition(logits, -k)[-k:] if k < self.n_vocab else np.arange(self.n_vocab)
            ids = ids[np.argsort(-logits[ids], kind="stable")]
            top = [(int(i), float(logits[i]) - log_total) for i in ids]
        return token, float(logits[token]) - log_total, top

    def _next_turn(self) -> list[_Slot]:
        """Deterministic mode: the one slot this step carries, taking turns so every request advances."""
        count = len(self._slots)
        for k in range(count):
            slot = self._slots[(self._turn + k) % count]
            if slot.job is not None:
                self._turn = (slot.seq_id + 1) % count
                return [slot]
        return []

    def _accept(self, slot: _Slot, token: int) -> None:
        job = slot.job
        assert job is not None
        if llama.llama_vocab_is_eog(self._vocab, token):
            self._finish(slot, "stop")
            return
        slot.generated += 1
        before = len(slot.text_bytes)
        slot.text_bytes += self._piece_bytes(token)
        # llama-cpp-python's rule, byte for byte: while the text may end inside a UTF-8 character,
        # the stop and length checks are skipped, so an answer cut at max_tokens can run up to 3
        # tokens past it to finish the character (its lead byte among the last 3 bytes).
        for k, byte in zip(range(3, 0, -1), slot.text_bytes[-3:], strict=False):
            for size, pattern in ((2, 0xC0), (3, 0xE0), (4, 0xF0)):
                if size > k and byte & pattern == pattern:
                    slot.multibyte_fix = size - k
        if slot.multibyte_fix > 0:
            slot.multibyte_fix -= 1
            slot.next_token = token
            return
        if job.stop:
            # Detected on the new bytes only (a window as long as the longest stop), so the check
            # stays O(stop) per token; _finish cuts on the decoded text, where the cut is a
            # character index. A stop string may end inside a multi-byte character of the text.
            longest = max(len(s.encode()) for s in job.stop)
            window = bytes(slot.text_bytes[max(0, before - longest) :])
            if any(s.encode() in window for s in job.stop):
                self._finish(slot, "stop")
                return
        if slot.generated >= job.max_tokens:
            self._finish(slot, "length")
            return
        slot.next_token = token

    def _finish(self, slot: _Slot, reason: str) -> None:
        job = slot.job
        assert job is not None
        text = slot.text_bytes.decode("utf-8", "ignore")
        if reason == "stop" and job.stop:
            cuts = [i for i in (text.find(s) for s in job.stop) if i >= 0]
            if cuts:
                text = text[: min(cuts)]
        completion = Completion(
            text=text,
            finish_reason=reason,
            prompt_tokens=len(job.prompt),
            completion_tokens=slot.generated,
            prompt_tokens_evaluated=slot.evaluated,
            prompt_ms=slot.prompt_ms,
            predicted_ms=slot.predicted_ms,
            logprobs=None if job.top_logprobs is None else self._token_texts(slot.logprobs, text),
        )
        self._release(slot)
        job.done(completion)

    def _token_texts(
        self, steps: Sequence[tuple[int, float, list[tuple[int, float]]]], text: str
    ) -> tuple[tuple[str, float, tuple[tuple[str, float], ...]], ...]:
        """The steps with texts: each generated token's the characters it completes, up to the end of the
        answer ``text`` (an end-of-generation token and tokens past a stop string add none and are dropped)."""
        out = []
        raw = bytearray()
        spelled = 0
        for token, logprob, top in steps:
            if spelled >= len(text) or llama.llama_vocab_is_eog(self._vocab, token):
                break
            raw += self._piece_bytes(token)
            now = raw.decode("utf-8", "ignore")
            piece = text[spelled : min(len(now), len(text))]
            spelled += len(piece)
            alternatives = tuple((self._piece_bytes(t).decode("utf-8", "replace"), lp) for t, lp in top)
            out.append((piece, logprob, alternatives))
        return tuple(out)

    def _release(self, slot: _Slot) -> None:
        slot.logprobs = []
        if slot.sampler is not None:
            llama.llama_sampler_free(slot.sampler)
        slot.sampler = None
        slot.job = None
        slot.next_token = None
        slot.to_read = []  # cut off mid-prompt, the cache holds only what was read

    def fail_all(self, error: BaseException) -> None:
        for slot in self._slots:
            if slot.job is not None:
                job = slot.job
                llama.llama_memory_seq_rm(self._memory, slot.seq_id, 0, -1)
                slot.cached.clear()
                self._release(slot)
                job.done(error)


def _put(batch: Any, i: int, token: int, pos: int, seq_id: int, logits: bool) -> None:
    batch.token[i] = token
    batch.pos[i] = pos
    batch.n_seq_id[i] = 1
    batch.seq_id[i][0] = seq_id
    batch.logits[i] = logits


def _grammar_sampler(vocab: Any, grammar: str | None) -> Any:
    """llama.cpp's grammar sampler for GBNF ``grammar`` (None without one, or when it does not parse)."""
    if grammar is None:
        return None
    sampler = llama.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), b"root")
    return sampler or None


def _sampler_chain(s: Sampling, n_vocab: int, grammar: Any = None) -> Any:
    """llama-cpp-python's ``Llama._init_sampler`` for these settings (no mirostat); ``grammar`` (a
    grammar sampler, owned by the chain from here on) after the penalties, where it puts one."""
    chain = llama.llama_sampler_chain_init(llama.llama_sampler_chain_default_params())
    add = llama.llama_sampler_chain_add
    add(
        chain,
        llama.llama_sampler_init_penalties(
            n_vocab, LAST_N_PENALISED, s.repeat_penalty, s.frequency_penalty, s.presence_penalty
        ),
    )
    if grammar is not None:
        add(chain, grammar)
    if s.temperature < 0:
        add(chain, llama.llama_sampler_init_dist(DEFAULT_SEED if s.seed is None else s.seed))
    elif s.temperature == 0:
        add(chain, llama.llama_sampler_init_greedy())
    else:
        add(chain, llama.llama_sampler_init_top_k(s.top_k))
        add(chain, llama.llama_sampler_init_typical(s.typical_p, 1))
        add(chain, llama.llama_sampler_init_top_p(s.top_p, 1))
        add(chain, llama.llama_sampler_init_min_p(s.min_p, 1))
        add(chain, llama.llama_sampler_init_temp(s.temperature))
        add(chain, llama.llama_sampler_init_dist(DEFAULT_SEED if s.seed is None else s.seed))
    return chain
