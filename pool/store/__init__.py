"""The run store and what is read out of it.

- :mod:`~pool.store.run_store` — ``run.sqlite``: the plan, every result, resumes;
  :mod:`~pool.store.outcome` — a result row and how a response is classified;
- :mod:`~pool.store.tallies` and :mod:`~pool.store.export` — ``summary.json`` and ``results.jsonl``;
  :mod:`~pool.store.costs` — what a night cost;
- :mod:`~pool.store.run_lock` — one process per run folder; :mod:`~pool.store.sqlite_db` — SQLite settings.
"""
