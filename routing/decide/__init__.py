"""decide: who serves each kind of question, and whether routing pays.

``decision`` (one rule for every choice: the leader by lower bound, paired tests against it, the tie
rule) → ``manifest`` (``routing_manifest.yaml``: buckets, families, default, orchestrator; its schema
is that module's docstring) → ``validation`` (the manifest's routing rebuilt per fold and scored on
held-out items against the best single model and the oracle); ``judged`` (the ties worth a judge's
side-by-side comparison within a call budget, and the paired decision judged battles make, kept
apart from the score decisions).
"""
