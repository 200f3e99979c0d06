"""routing: scores in; leaderboards, pairwise ratings, hard subsets, the routing manifest and a report out.

Reads results (``RUN_DIR/scores.jsonl`` + ``summary.json``), uses ``eval``'s metrics, makes no model
calls. One room per stage of the data's route; a room imports only rooms before it on the route
(and ``cli_types`` at the top), never the commands::

    load, stats  →  boards  →  judges, decide  →  report  →  nights
                                      decide   →  serve
    screen  →  scenario  (which also reads load, stats and judges)
    nights  →  bank  (item banks from the history; build reads its estimated marks)

``build`` takes one build from ``load`` to ``report``; ``nights`` comes after a night's build (index,
compare, trends); ``serve`` holds the router's decisions, made from a build's manifest.

- ``load/`` — run folders into one score table: ``rows`` (one ``scores.jsonl`` row, checked),
  ``columns`` (the columnar copy ``scores.columns/``), ``table`` (the table in memory: entrants,
  buckets' columns), ``runs`` (read, check and merge run folders; the nightly digest of a run),
  ``freshness`` (a gold freshness audit's drifted points).
- ``stats/`` — pure functions over arrays: ``intervals`` (Wilson, t and bootstrap intervals, paired
  tests, Holm), ``rating_fits`` (win rates, Elo over many orders, Bradley–Terry with intervals),
  ``blas`` and ``forked`` (how the fits use the cores: single-threaded BLAS, a part in a forked child).
- ``boards/`` — what is ranked from the table: ``leaderboard`` (per family and bucket),
  ``pairwise`` (``pairwise.json``), ``hard`` (``hard.yaml``), ``frontier`` (quality against cost),
  ``freshness`` (buckets whose items carry a gold a freshness audit found drifted).
- ``judges/`` — how far the judge can be trusted: ``reliability`` (length bias, family conflict,
  parse ladder, calibration), ``agreement`` (Krippendorff's α, Fleiss' κ), ``panel_agreement``
  (a judge panel's members), ``objective`` (objective checks and decision recognition vs the judge).
- ``decide/`` — who serves each bucket: ``decision`` (the leader, paired tests, the tie rule),
  ``manifest`` (``routing_manifest.yaml``; its schema is that module's docstring), ``validation``
  (routing cross-validated against the best single model and the oracle).
- ``report/`` — what a person reads: ``page`` (``report.html``; its sections listed once, in
  ``SECTIONS``), ``sections/`` (one module per section), ``html`` (escaped cells), ``markdown``
  (``leaderboard.md``), ``digest`` (the end-of-run digest of judged answers).
- ``nights/`` — night over night: ``history`` (the run index ``index.jsonl``), ``run_scores`` (what
  the index keeps per run), ``compare`` with ``decision_changes`` and ``compare_md``
  (``compare.json`` / ``compare.md``), ``trends``, ``sections`` (the report's "Since last night" and
  "Trends"), ``nightly`` (what ``pool.run`` calls after a night).
- ``bank/`` — item banks fitted on the run index's history (2PL by MAP: ``irt``; per-family matrices:
  ``history``), adaptive tests on them (``adaptive``) and the ``estimated`` marks a build puts on
  adaptively scored models (``estimates``); it reads ``nights`` (the index), so it comes after it.
- ``serve/`` — the router's decisions as pure functions (the server that uses them is ``pool.serve``).
- ``screen/`` — the theory screen before any run (``python -m routing.screen``): published evidence in,
  ``shortlist.yaml`` (must-test / optional / skip, ceiling references) and ``screen.md`` out; reads no
  run and imports no other room.
- ``scenario/`` — a shortlist against a run of its models (``python -m routing.scenario``): family scores
  side by side, theory order vs measured order (Spearman's ρ from ``judges``), warnings.
- Top: ``build`` (``python -m routing.build``), ``cli_types`` (argparse types, shared with
  ``pool.run``), and the commands ``columns``, ``compare``, ``digest``, ``history`` and ``nightly``:
  each keeps its ``python -m routing.NAME`` name as a thin alias of the room module that does the work.
"""
