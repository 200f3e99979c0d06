"""routing: scores in, leaderboards, pairwise ratings, hard subsets, the routing manifest and a report out.

Reads results (``RUN_DIR/scores.jsonl`` + ``summary.json``), uses ``eval``'s metrics, makes no model
calls. Modules by job: ``load`` (read, check, merge runs; identities) → ``table`` (columns) →
``stats`` (vectorised percentile bootstrap) → ``leaderboard`` (per family and bucket) →
``ratings`` / ``pairwise`` (win rates, Elo, Bradley–Terry) → ``hard`` (composite difficulty) →
``manifest`` (``routing_manifest.yaml``; its schema is that module's docstring) → ``markdown`` /
``report`` (leaderboard.md, report.html) → ``build`` (the ``python -m routing.build`` CLI).
"""
