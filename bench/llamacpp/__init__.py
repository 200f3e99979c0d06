"""Benchmarks of the local llama.cpp engine (they need the ``local`` extra and its GGUF models).

- ``build``: ``python -m bench.llamacpp.build`` — prompt and decode speed of this interpreter's
  llama-cpp-python build, against another interpreter's.
- ``throughput``: ``python -m bench.llamacpp.throughput`` — tokens per second of the batched engine and
  of replicas, against one 2-thread server.
- ``deterministic``: ``python -m bench.llamacpp.deterministic`` — what ``deterministic: true`` costs the
  batched engine in tokens per second, and whether its answers stay the same in any batch.
"""
