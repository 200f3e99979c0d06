"""The router: a run's routing manifest served as an OpenAI-compatible endpoint (``python -m routing.serve``).

It lives in ``pool`` because it forwards to the pool's endpoints; what it decides with is pure and
lives in :mod:`routing.serve` (texts, classifier, routes, the end-to-end validation row). Modules by
job: ``state`` (the run's items and scores, the manifest in service, the upstreams; immutable) →
``managed`` (the llama.cpp servers of the manifest's managed models, started as pool.run starts
them) → ``upstream`` (one forward, and what counts as a dead upstream) → ``metrics`` (Prometheus
text) → ``app`` (handlers, hot reload) → ``__main__`` (the CLI).
"""
