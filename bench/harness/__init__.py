"""What the benchmarks share and the tests reuse (``tests`` may import ``bench``, never the reverse).

- ``measure``: peak memory, the JSON report every benchmark writes, another copy of the tree as a baseline.
- ``inputs``: seeded synthetic inputs of ``bench.metrics_bench``.
- ``upstream``: a FAKE server of ``tests/fakes`` started as its own process, and a counting upstream in-process.
- ``chaos``: kill ``pool.run`` in every phase, resume, compare with an uninterrupted run.
- ``malformed_cases``: the table of malformed inputs and the harness that runs one
  (``python -m bench.harness.malformed_cases`` prints the table).
- ``ray_cluster``: a Ray cluster on loopback only, and the check that no Ray process talks elsewhere.
- ``router``: ``python -m routing.serve`` in a subprocess, and the first run of the FAKE specialists.
- ``specialists``: the suite and pool file of the FAKE specialists of known quality.
"""
