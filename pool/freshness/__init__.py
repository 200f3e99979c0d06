"""The gold freshness audit (``python -m pool.freshness``): is each gold point of a suite still what the
latest guideline says? Read-only towards the suite; a person decides what to change.

Rooms, in the data's order:

- :mod:`~pool.freshness.points` — a domain's gold points: its items' ``expected_topics`` and ``must_warn``,
  de-duplicated by normalised text, with their ``source_refs`` and item ids;
- :mod:`~pool.freshness.spec` — what an audit is asked (:class:`~pool.freshness.spec.FreshnessSpec`), its
  inputs read and checked, the ``--dry-run`` view (calls, tokens, cost at most);
- :mod:`~pool.freshness.judging` — the ``freshness`` judge contract asked per point through a run ``Session``
  and run store (limits, cache, resume, one re-ask), a panel's labels combined by majority;
- :mod:`~pool.freshness.report` — ``freshness.json`` and ``freshness/<domain>.md``;
- :mod:`~pool.freshness.audit` — :func:`~pool.freshness.audit.run_audit`, ``resume_audit``, ``plan_audit``:
  the audit folder, its lock and store, exit codes; :mod:`~pool.freshness.cli` is the command over them;
- :mod:`~pool.freshness.attach` — a pool file's ``freshness:`` audit copied into each run folder, where
  ``routing.build`` flags the items whose gold may be stale.
"""
