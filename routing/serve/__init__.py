"""The router's decisions, as pure functions: which bucket a question is, and which model that means.

Modules by job: ``texts`` (the text classified, the same for a request and for a run's item) →
``classifier`` (k-NN over the run's items, a confidence per level) → ``routes`` (the manifest's
targets, the fallback chain, the thresholds chosen by cross-validation, the ``x-medpool-route``
header) → ``validation`` (the manifest's end-to-end row: routing with inferred buckets,
cross-validated) → ``accuracy`` (the classifier's cross-validated accuracy on a suite).

The server that uses them forwards to the pool's endpoints, so it lives in :mod:`pool.serve`;
``python -m routing.serve`` runs it.
"""
