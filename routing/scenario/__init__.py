"""The scenario report: the theory screen's shortlist set against what a run of its models measured.

``python -m routing.scenario RUN_DIR --shortlist shortlist.yaml`` (``__main__``) writes
``reports/<domain>-<axis>-<date>.md``. Modules:

- ``measured`` — per candidate, each family's score with its interval, the specialty family's
  unsupported rate, and the score the theory order is compared with (read from the run's score table);
- ``report`` — the page: families side by side, theory order against measured order (Spearman's ρ, the
  pairs the two orders put the other way round), warnings, the ceiling references the best local
  candidate is below.

The shortlist comes from ``routing.screen``; the run from ``python -m pool.run --from-shortlist``.
"""
