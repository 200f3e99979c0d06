"""``python -m pool.pairwise RUN_DIR``: judged battles between the models a run's scores left tied.

Rooms, in the order a battle travels:

- ``select``    — the run's ties (tied models, overlapping intervals, undecided buckets), the
                  battles within the budget, the answers and items the judge must see; the dry run
- ``judging``   — every judge asked about every battle in both orders, through the pool's machinery,
                  stored in ``RUN_DIR/pairwise/`` (a repeat asks only what has no verdict)
- ``__main__``  — the command: ``battles.jsonl`` and ``pairwise_judged.json`` (position consistency,
                  judged decisions and ratings per bucket, decisive buckets with and without them)

The contract is ``judge.contracts.pairwise``, the two orders → one battle rule ``judge.pairwise``,
the statistics ``routing.boards.judged`` and ``routing.decide.judged``.
"""
