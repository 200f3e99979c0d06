"""load: run folders in, one score table out — the only file reading in aggregation.

``rows`` checks one ``scores.jsonl`` row (every reader takes rows from it, so all accept and refuse
the same files) → ``columns`` builds or reads a run's columnar copy (``scores.columns/``; the judged
rows' verdict details as columns of their own, ``verdicts``, what judge reliability audits) →
``table`` holds the rows as numpy columns, one row per (entrant, item) → ``runs`` reads, checks and
merges run folders into that table (and digests one run for the nightly index); ``freshness`` reads a
gold freshness audit (``freshness.json``: its drifted points and their items). Errors name
``path:line: field``.
"""
