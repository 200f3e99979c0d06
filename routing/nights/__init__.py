"""nights: night over night, after a run's own build.

``run_scores`` (a run's score per model and family) → ``history`` (the run index ``index.jsonl``) →
``compare`` (two runs' paired differences, with ``decision_changes``, ``flips`` (answers that changed on
unchanged questions) and ``compare_md``: ``compare.json`` / ``compare.md``) → ``trends`` (scores over the
last comparable nights) → ``sections`` (the report's "Since last night" and "Trends", spliced into
``report.html``; the columns of its tables are ``DELTA_COLUMNS``) → ``nightly`` (``after_run``: what
``pool.run`` calls after a night).

``gate/`` — what a comparison could see: ``detectable`` (each paired test's minimum detectable drop and its
status ``regressed`` / ``improved`` / ``no change`` / ``inconclusive``) and ``sequential`` (the anytime-valid
gate over nights, its state ``gate_sequential.json`` beside the run index).
"""
