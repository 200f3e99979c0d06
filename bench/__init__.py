"""Benchmarks (not tests): each reports its figures as ratios against a baseline run in the same process
tree; ``bench/README.md`` has the tables. ``python -m bench.<name> --help`` for any of them.

At the top, one module per benchmark:
- ``metrics_bench`` (eval metrics), ``routing_bench`` and ``aggregation_bench`` (leaderboards, ratings,
  the build), ``validity`` (are the routing decisions sound), ``sql_check_bench`` (the objective SQL check);
- ``scheduler_bench`` (the request path), ``driver_bench`` (the whole run), ``ray_bench`` (the Ray
  executor), ``router_bench`` (the latency the router adds), ``chaos`` (kills in every phase, then resume),
  ``default_run`` (the README's first run, timed).

Rooms:
- ``llamacpp/``: the local llama.cpp engine — ``build`` (two builds' prompt and decode speed) and
  ``throughput`` (the batched engine and replicas against one server).
- ``harness/``: what the benchmarks share, and the tests reuse — measuring and reporting, synthetic
  inputs, the upstreams (a FAKE server as its own process, a counting one in-process), the chaos
  harness, the malformed-input cases, the loopback Ray cluster, the router and its FAKE specialists.
  Nothing in ``bench`` imports ``tests``: a FAKE server of ``tests/fakes`` is started by its command line.
"""
