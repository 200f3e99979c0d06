"""The llama.cpp server engines a managed backend can run, and the module each one runs.

Constants only (no llama_cpp, no aiohttp), so the pool config can name engines without loading
either.
"""

from __future__ import annotations

from typing import Literal

Engine = Literal["batched", "llama_cpp"]

SERVER_CMDLINE_MARKER = "llama_cpp.server"  # in every server's argv: ``python -m llama_cpp.server``
# The module each engine runs (``python -m MODULE --config_file ...``); also its argv marker.
ENGINE_MODULES: dict[str, str] = {"llama_cpp": SERVER_CMDLINE_MARKER, "batched": "runners.llamacpp.batched_server"}
# Argv markers a pid file may name: each engine's module, and the batched server's module path in
# earlier versions (a run killed under one leaves that marker, and --resume must still stop it).
SERVER_MARKERS: frozenset[str] = frozenset({*ENGINE_MODULES.values(), "runners.llamacpp_batched_server"})
