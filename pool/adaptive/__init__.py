"""Adaptive scoring (``pool.run --adaptive``): a new model answers only the items most informative for it.

- ``tests`` — which models and families are tested adaptively, from the item banks fitted on the run
  history (:mod:`routing.bank`); everything else is asked in full, and why is said.
- ``driver`` — the sequential loop inside a run's session: pick items, ask, score, update the
  ability, stop at the stated standard error or the budget; writes ``RUN_DIR/adaptive.json``.
"""
