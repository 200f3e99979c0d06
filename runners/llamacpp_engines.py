"""The llama.cpp server engines a managed backend can run, and their defaults.

Constants only (no llama_cpp, no aiohttp), so the pool config can name and size engines without
loading either.
"""

from __future__ import annotations

from typing import Literal

Engine = Literal["batched", "llama_cpp"]

SERVER_CMDLINE_MARKER = "llama_cpp.server"  # in every server's argv: ``python -m llama_cpp.server``
# The module each engine runs (``python -m MODULE --config_file ...``); also its argv marker.
ENGINE_MODULES: dict[str, str] = {"llama_cpp": SERVER_CMDLINE_MARKER, "batched": "runners.llamacpp_batched_server"}

# Sequences the batched engine decodes per step, per model, when a pool does not say: 4 reached
# 1.45-1.57x one sequence on 2 cores, 8 no more (bench/README.md, "local_throughput").
DEFAULT_SLOTS = 4
