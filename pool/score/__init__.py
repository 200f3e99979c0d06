"""Score a run's answers: gold metrics, the judge's verdicts, anchors.

- :mod:`~pool.score.stage` scores every answer once it is in (the judge's calls go through the run's
  scheduler) and writes ``scores.jsonl``;
- :mod:`~pool.score.arrival` scores judge-free answers in a worker process while the run still waits
  on the network;
- :mod:`~pool.score.rounds` is what the stage's parts share: the run being scored, its judges, one way
  to send judge units (``judge_round``) and the answer as the judge sees it;
- :mod:`~pool.score.identity` says who answered and who judged (judge setups, model identities);
- :mod:`~pool.score.guards` scores answers not worth a judge call (and re-asks them once when asked to);
- :mod:`~pool.score.panel` turns a judge panel's member verdicts into one;
- :mod:`~pool.score.criteria_items` grades criteria answers criterion by criterion;
- :mod:`~pool.score.p_met_cut` where a weighing judge's P(met) is cut (its calibrated threshold, else 0.5);
- :mod:`~pool.score.anchors` re-asks a sample of cached verdicts to see whether the judge drifted.
"""
