"""stats: the statistics, as pure functions over arrays (no files, no printing).

``intervals`` — every interval a cell carries (Wilson, t, percentile bootstrap), the paired tests and
Holm's correction; ``rating_fits`` — win rates, Elo over many battle orders and Bradley–Terry with
bootstrap intervals (the fits at scale of ``eval``'s catalogue ratings); ``blas`` and ``forked`` — how
the fits use the machine's cores (single-threaded BLAS for many small solves; one part of a build in
a forked child).
"""
