"""The router's counters and latency histograms, rendered as Prometheus text (``GET /metrics``).

Series (labels are bucket = the target that served the request, model = the model that answered or
was tried last, by = hint | classifier | fallback):

- ``medpool_router_requests_total{bucket, model, by, status}``: requests answered, by HTTP status;
- ``medpool_router_errors_total{bucket, model, status}``: the ones with status >= 400;
- ``medpool_router_upstream_failures_total{model, reason}``: an upstream dead for one request
  (connection, timeout, http_5xx, http_429, oversize, no_key) — the request went on down its chain;
- ``medpool_router_request_seconds{bucket, model}``: whole-request latency (histogram);
- ``medpool_router_overhead_seconds``: the router's own time, request latency minus the upstream wait;
- ``medpool_router_reloads_total{result}`` and ``medpool_router_manifest_info{sha256}``.

Label values are escaped as the text format requires (backslash, double quote, newline).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

LATENCY_BOUNDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
OVERHEAD_BOUNDS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(names: Sequence[str], values: Sequence[str]) -> str:
    return "{" + ",".join(f'{n}="{_escape(str(v))}"' for n, v in zip(names, values, strict=True)) + "}" if names else ""


@dataclass
class Histogram:
    bounds: tuple[float, ...]
    counts: np.ndarray = field(init=False)
    total: float = 0.0

    def __post_init__(self) -> None:
        self.counts = np.zeros(len(self.bounds) + 1, dtype=np.int64)

    def observe(self, seconds: float) -> None:
        self.counts[int(np.searchsorted(self.bounds, seconds, side="left"))] += 1
        self.total += seconds

    def lines(self, name: str, names: Sequence[str], values: Sequence[str]) -> list[str]:
        out, running = [], 0
        for bound, count in zip((*map(str, self.bounds), "+Inf"), self.counts.tolist(), strict=True):
            running += count
            out.append(f"{name}_bucket{_labels((*names, 'le'), (*values, bound))} {running}")
        out.append(f"{name}_sum{_labels(names, values)} {self.total:.6f}")
        out.append(f"{name}_count{_labels(names, values)} {running}")
        return out


@dataclass
class Metrics:
    requests: defaultdict[tuple[str, str, str, str], int] = field(default_factory=lambda: defaultdict(int))
    failures: defaultdict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    latency: dict[tuple[str, str], Histogram] = field(default_factory=dict)
    overhead: Histogram = field(default_factory=lambda: Histogram(OVERHEAD_BOUNDS))
    reloads: defaultdict[str, int] = field(default_factory=lambda: defaultdict(int))

    def request(self, bucket: str, model: str, by: str, status: int, seconds: float, upstream_s: float) -> None:
        self.requests[(bucket, model, by, str(status))] += 1
        key = (bucket, model)
        if key not in self.latency:
            self.latency[key] = Histogram(LATENCY_BOUNDS)
        self.latency[key].observe(seconds)
        self.overhead.observe(max(0.0, seconds - upstream_s))

    def failure(self, model: str, reason: str) -> None:
        self.failures[(model, reason)] += 1

    def render(self, manifest_sha: str) -> str:
        lines = [
            "# HELP medpool_router_requests_total "
            "Requests answered, by the target that served them, model, how routed and status.",
            "# TYPE medpool_router_requests_total counter",
        ]
        for key, count in sorted(self.requests.items()):
            lines.append(f"medpool_router_requests_total{_labels(('bucket', 'model', 'by', 'status'), key)} {count}")
        lines += [
            "# HELP medpool_router_errors_total Requests answered with an HTTP status >= 400.",
            "# TYPE medpool_router_errors_total counter",
        ]
        errors: defaultdict[tuple[str, str, str], int] = defaultdict(int)
        for (bucket, model, _, status), count in self.requests.items():
            if int(status) >= 400:
                errors[(bucket, model, status)] += count
        for key, count in sorted(errors.items()):
            lines.append(f"medpool_router_errors_total{_labels(('bucket', 'model', 'status'), key)} {count}")
        lines += [
            "# HELP medpool_router_upstream_failures_total An upstream that could not answer one request.",
            "# TYPE medpool_router_upstream_failures_total counter",
        ]
        for key, count in sorted(self.failures.items()):
            lines.append(f"medpool_router_upstream_failures_total{_labels(('model', 'reason'), key)} {count}")
        lines += [
            "# HELP medpool_router_request_seconds Whole-request latency.",
            "# TYPE medpool_router_request_seconds histogram",
        ]
        for key, histogram in sorted(self.latency.items()):
            lines += histogram.lines("medpool_router_request_seconds", ("bucket", "model"), key)
        lines += [
            "# HELP medpool_router_overhead_seconds The router's own time: request latency minus the upstream wait.",
            "# TYPE medpool_router_overhead_seconds histogram",
        ]
        lines += self.overhead.lines("medpool_router_overhead_seconds", (), ())
        lines += [
            "# HELP medpool_router_reloads_total Manifest reloads by result.",
            "# TYPE medpool_router_reloads_total counter",
        ]
        for result, count in sorted(self.reloads.items()):
            lines.append(f"medpool_router_reloads_total{_labels(('result',), (result,))} {count}")
        lines += [
            "# HELP medpool_router_manifest_info The manifest in service.",
            "# TYPE medpool_router_manifest_info gauge",
            f"medpool_router_manifest_info{_labels(('sha256',), (manifest_sha,))} 1",
        ]
        return "\n".join(lines) + "\n"
