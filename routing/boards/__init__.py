"""boards: what is ranked from a score table, per metric family and never blended.

``leaderboard`` (cells per family and bucket, with intervals) → ``pairwise`` (``pairwise.json``:
battles, Elo, Bradley–Terry per family and bucket) → ``hard`` (``hard.yaml``: the hardest items by
composite difficulty); ``frontier`` (quality against cost per family).
"""
