"""Objective checks: answers that can be run are checked by running them, beside the judge.

- :mod:`eval.objective.sql` — an SQL answer executed against the item's schema and data, its result
  compared with the reference query's;
- :mod:`eval.objective.api_call` — an API-call answer parsed and compared with the reference call
  against the declared signature.

``eval.scorers.checked`` is their one user: it scores a reference item's answer with its check.
"""
