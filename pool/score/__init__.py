"""Score a run's answers: gold metrics, the judge's verdicts, anchors.

- :mod:`~pool.score.stage` scores every answer once it is in (the judge's calls go through the run's
  scheduler) and writes ``scores.jsonl``;
- :mod:`~pool.score.arrival` scores judge-free answers in a worker process while the run still waits
  on the network;
- :mod:`~pool.score.anchors` re-asks a sample of cached verdicts to see whether the judge drifted.
"""
