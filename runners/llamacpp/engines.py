"""The llama.cpp server engines a managed backend can run, and the module each one runs.

Constants only (no llama_cpp, no aiohttp), so the pool config can name engines without loading
either.
"""

from __future__ import annotations

from typing import Literal

Engine = Literal["batched", "llama_cpp"]

# The argv marker of a pid file that names none: ``python -m llama_cpp.server``, which the llama_cpp
# engine ran before it ran it through ``runners.llamacpp.single_server``.
SERVER_CMDLINE_MARKER = "llama_cpp.server"
# The module each engine runs (``python -m MODULE --config_file ...``); also its argv marker. The
# llama_cpp engine is llama-cpp-python's server with bounded token logprobs (runners.llamacpp.single_server).
ENGINE_MODULES: dict[str, str] = {
    "llama_cpp": "runners.llamacpp.single_server",
    "batched": "runners.llamacpp.batched_server",
}
# Argv markers a pid file may name: each engine's module, and the modules of earlier versions
# (a run killed under one leaves that marker, and --resume must still stop it).
SERVER_MARKERS: frozenset[str] = frozenset(
    {*ENGINE_MODULES.values(), SERVER_CMDLINE_MARKER, "runners.llamacpp_batched_server"}
)
