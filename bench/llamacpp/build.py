"""How fast the installed llama.cpp build reads a prompt and decodes, per shipped model, against another build.

The default ``--orchestration`` run spends about 40% of its server time reading prompts (the judge's
rubric, question and answer; the candidates' questions), and prompt reading is a batched matrix
product, which is where the CPU's instruction sets (AVX2, AVX-512, VNNI) decide the speed. Decoding
one token at a time is bound by memory bandwidth and changes little. This bench measures both on
the three shipped GGUF models, one thread (what a replica gets), straight through llama.cpp's C API
(``llama_decode``), so the server's HTTP and sampling are left out. llama.cpp logs to the child's
stderr, which is shown only when the child fails.

``--baseline PYTHON`` names another interpreter whose ``llama_cpp`` is a different build of the same
version (a venv built with other ``CMAKE_ARGS``); each model is measured in a fresh child process of
each interpreter, interleaved, best of ``--reps``, so drift on a shared machine hits both.

    python -m bench.llamacpp.build                                   # this interpreter's build only
    python -m bench.llamacpp.build --baseline /tmp/avx2/bin/python   # ratios against another build
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROMPT_TOKENS = 256
DECODE_TOKENS = 16


def child(model_file: str, reps: int) -> dict[str, Any]:
    """Best-of-``reps`` ms per token: one ``PROMPT_TOKENS`` batch, then ``DECODE_TOKENS`` single steps."""
    import llama_cpp as lib

    lib.llama_backend_init()
    model = lib.llama_model_load_from_file(model_file.encode(), lib.llama_model_default_params())
    if not model:
        raise SystemExit(f"{model_file}: llama.cpp could not load it")
    prompt_ms = decode_ms = float("inf")
    for _ in range(reps):
        params = lib.llama_context_default_params()
        params.n_ctx, params.n_batch, params.n_threads, params.n_threads_batch = 1024, 512, 1, 1
        ctx = lib.llama_init_from_model(model, params)
        batch = lib.llama_batch_init(PROMPT_TOKENS, 0, 1)
        try:
            for i in range(PROMPT_TOKENS):  # token ids well inside every vocabulary; the content does not matter
                batch.token[i], batch.pos[i], batch.n_seq_id[i] = 1000 + i, i, 1
                batch.seq_id[i][0], batch.logits[i] = 0, i == PROMPT_TOKENS - 1
            batch.n_tokens = PROMPT_TOKENS
            start = time.perf_counter()
            if lib.llama_decode(ctx, batch) != 0:
                raise SystemExit("llama_decode failed on the prompt")
            prompt_ms = min(prompt_ms, 1e3 * (time.perf_counter() - start) / PROMPT_TOKENS)
            start = time.perf_counter()
            for step in range(DECODE_TOKENS):
                batch.n_tokens, batch.token[0], batch.pos[0] = 1, 2000 + step, PROMPT_TOKENS + step
                batch.n_seq_id[0], batch.seq_id[0][0], batch.logits[0] = 1, 0, True
                if lib.llama_decode(ctx, batch) != 0:
                    raise SystemExit("llama_decode failed on a decode step")
            decode_ms = min(decode_ms, 1e3 * (time.perf_counter() - start) / DECODE_TOKENS)
        finally:
            lib.llama_batch_free(batch)
            lib.llama_free(ctx)
    return {
        "prompt_ms_per_token": prompt_ms,
        "decode_ms_per_token": decode_ms,
        "system_info": lib.llama_print_system_info().decode(errors="replace"),
    }


def measure(python: str, model_file: str, reps: int) -> dict[str, Any]:
    proc = subprocess.run(
        [python, "-m", "bench.llamacpp.build", "--child", model_file, "--reps", str(reps)],
        cwd=Path(__file__).resolve().parents[2],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"{python} on {model_file} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.llamacpp.build", description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", metavar="PYTHON", help="another interpreter with another llama_cpp build")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument("--child", metavar="GGUF", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.reps)))
        return 0
    from runners.llamacpp.gguf_models import MODELS, model_path

    pythons = {"this": sys.executable} | ({"baseline": args.baseline} if args.baseline else {})
    rows = []
    for key in MODELS:
        gguf = str(model_path(key, None))
        row: dict[str, object] = {"model": key}
        for label, python in pythons.items():
            row[label] = measure(python, gguf, args.reps)
        rows.append(row)
    print("| model | build | prompt ms/token | decode ms/token |")
    print("|---|---|---:|---:|")
    for row in rows:
        for label in pythons:
            m = row[label]
            print(f"| {row['model']} | {label} | {m['prompt_ms_per_token']:.2f} | {m['decode_ms_per_token']:.1f} |")
        if args.baseline:
            this, base = row["this"], row["baseline"]
            print(
                f"| {row['model']} | speed-up | {base['prompt_ms_per_token'] / this['prompt_ms_per_token']:.2f}× "
                f"| {base['decode_ms_per_token'] / this['decode_ms_per_token']:.2f}× |"
            )
    for label in pythons:
        print(f"{label}: {rows[0][label]['system_info']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
