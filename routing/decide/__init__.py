"""decide: who serves each kind of question, and whether routing pays.

``decision`` (one rule for every choice: the leader by lower bound, paired tests against it, the tie
rule) → ``manifest`` (``routing_manifest.yaml``: buckets, families, default, orchestrator; its schema
is that module's docstring) → ``validation`` (the manifest's routing rebuilt per fold and scored on
held-out items against the best single model and the oracle).
"""
