"""boards: what is ranked from a score table, per metric family and never blended.

``leaderboard`` (cells per family and bucket, with intervals) → ``pairwise`` (``pairwise.json``:
battles, Elo, Bradley–Terry per family and bucket) → ``hard`` (``hard.yaml``: the hardest items by
composite difficulty); ``frontier`` (quality against cost per family); ``live`` (what the live family's
scores are: agreement with its reference agents, not truth); ``judged`` (win rates and Bradley–Terry
from judged battles, ``battles: judged``, never mixed with the score-derived ones); ``freshness`` (the
buckets ranking items whose gold a freshness audit found drifted: "gold may be stale", nothing dropped).
"""
