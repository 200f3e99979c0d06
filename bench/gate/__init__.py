"""bench.gate: the nightly regression gate on simulated nights with known truth (``python -m bench.gate``).

``sims`` holds the simulations (pure functions over seeded numpy draws, pushed through the statistics
``routing.compare`` uses); ``__main__`` is the command that prints and writes their rows.
"""
