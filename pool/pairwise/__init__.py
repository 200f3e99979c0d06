"""``python -m pool.pairwise RUN_DIR``: judged battles between the models a run's scores left tied.

Rooms, in the order a battle travels:

- ``select``    — the run's ties (tied models, overlapping intervals, undecided buckets), the
                  battles within the budget, the answers and items the judge must see; the dry run
- ``judging``   — every judge asked about every battle in both orders, through the pool's machinery,
                  stored in ``RUN_DIR/pairwise/`` (a repeat asks only what has no verdict)
- ``stage``     — one stage for both places it runs (the command and ``pool.run`` after scoring):
                  ``battles.jsonl`` and ``pairwise_judged.json`` (position consistency, judged decisions
                  and ratings per bucket, decisive buckets with and without them)
- ``settings``  — whether a run has the stage (``--pairwise``, the pool file's ``pairwise:`` block), its
                  budget, and what a run's dry run can say about it
- ``__main__``  — the command ``python -m pool.pairwise RUN_DIR``

The contract is ``judge.contracts.pairwise``, the two orders → one battle rule ``judge.pairwise``,
the statistics ``routing.boards.judged`` and ``routing.decide.judged``.
"""
