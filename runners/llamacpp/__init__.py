"""The managed local llama.cpp servers (``type: llamacpp``): started by the run, always stopped.

Each module imports what it needs from its sibling directly; this file re-exports nothing, so the
pool config can read :mod:`~runners.llamacpp.settings` without loading aiohttp or llama_cpp.

- ``settings.py`` — :class:`~runners.llamacpp.settings.LlamaCppSettings`, the backend's pool-file
  block: every llama.cpp option once, with its default, sized to the machine. Built once from the
  pool file and passed whole to the replicas, the server, the batched server and the engine.
- ``engines.py`` — the engines a backend can run (``batched``, ``llama_cpp``) and the module each runs.
- ``gguf_models.py`` — the GGUF models PyPI packages ship, prepared into a cache and sha256-verified
  (``python -m runners.llamacpp.gguf_models``).
- ``server.py`` — :class:`~runners.llamacpp.server.ManagedLlamaServer`: config file, own process
  group, pid file, readiness, timings from the log; stops a killed run's leftover. Its ``ManagedLifetime``
  (``async with`` starts, always stops) and ``ServerOptions`` are what the replicas share with it.
- ``replicas.py`` — several identical servers for one backend, started and stopped together.
- ``watch.py`` — a runner that turns a managed server's death into one error naming its cause.
- ``exit.py`` — why a server stopped, said so a person can act on it (a bad build's SIGILL).
- ``batching.py`` — continuous batching on llama.cpp's C API: the requests in flight share each
  decode step.
- ``batched_server.py`` — the OpenAI-compatible server over that engine
  (``python -m runners.llamacpp.batched_server --config_file CONFIG.json``, started by the server
  launcher).
- ``single_server.py`` — the ``llama_cpp`` engine: llama-cpp-python's server whose models return
  token logprobs from the sampled row only (``python -m runners.llamacpp.single_server``).
"""
