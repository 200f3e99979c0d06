"""The SQL check: extract the answer's query, run it and the reference on the item's data in
SQLite (through sqlglot's dialect translation), compare the results (:mod:`~eval.objective.sql.check`)."""
