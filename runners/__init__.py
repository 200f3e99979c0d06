"""HTTP backends and the managed llama.cpp server — a leaf: it imports nothing of ours.

A runner turns a request into a response and knows nothing of items, runs or judging.

- ``base.py`` — the one small interface: :class:`~runners.base.Runner`, the request and response
  records (with a request's ``top_logprobs`` and a response's ``token_logprobs``), the error classes.
- ``protocol.py`` — what the JSON-over-HTTP protocols share: an endpoint plus two pure functions.
- ``retry.py`` — one classified attempt and the bounded retry loop around it (what is retried, why,
  the wait formula).
- ``registry.py`` — backend type name → runner and settings block (``@backend``), ``make_runner``.
- ``settings.py`` — what every backend type's pool-file block shares, and the endpoint checks.
- ``refusable.py`` — optional request fields a server may refuse (a verdict's ``response_format``, a
  judge's ``logprobs``): one refused request, one warning, then left out for the rest of the run.
- ``balanced.py`` — one runner in front of identical replicas, each request to the least busy.
- ``embeddings.py`` — a client for OpenAI-compatible ``/embeddings`` endpoints.
- ``protocols/`` — one module per backend protocol (OpenAI-compatible, vLLM, Ollama), each declaring
  its runner and its pool-file settings; a new backend type is one new module there.
- ``llamacpp/`` — the managed local llama.cpp servers: their settings block, the GGUF models, the
  server launcher and its replicas, the batched engine and its server (see its ``__init__``).
- ``gguf_models.py`` — ``python -m runners.gguf_models``, the same command as
  ``python -m runners.llamacpp.gguf_models``, for scripts that call it by that name.
"""
