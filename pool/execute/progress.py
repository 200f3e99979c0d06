"""Live progress per model: tqdm bars on a terminal, periodic log lines under cron.

A nightly run's output usually goes to a log file, where redrawn bars are noise; so when stderr is
not a terminal the same numbers (done/total, errors, rate, ETA) are written as one line per model
every ``interval_s`` seconds and once at the end.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TextIO

from tqdm import tqdm


@dataclass
class ModelTally:
    total: int
    done: int = 0
    errors: int = 0  # "error": answered, but truncated at the token budget, empty or oversize
    infra: int = 0  # "infra_error": no answer
    cached: int = 0
    started: float = field(default_factory=time.monotonic)

    def line(self, name: str) -> str:
        elapsed = max(time.monotonic() - self.started, 1e-9)
        fresh = self.done - self.cached
        rate = fresh / elapsed
        remaining = self.total - self.done
        eta = f"{remaining / rate:.0f}s" if rate > 0 and remaining else ("0s" if not remaining else "?")
        return (
            f"{name}: {self.done}/{self.total} done, {self.errors} flawed (truncated/empty), {self.infra} infra_error, "
            f"{self.cached} cached, {rate:.2f}/s, ETA {eta}"
        )


class ProgressDisplay:
    """Implements the scheduler's ``Progress`` protocol."""

    def __init__(
        self,
        totals: Mapping[str, int],
        *,
        stream: TextIO | None = None,
        interactive: bool | None = None,
        interval_s: float = 30.0,
    ) -> None:
        self.stream = stream or sys.stderr
        self.interactive = self.stream.isatty() if interactive is None else interactive
        self.interval_s = interval_s
        self.tallies = {name: ModelTally(total) for name, total in totals.items()}
        self._last_log = time.monotonic()
        self._bars: dict[str, tqdm] = {}
        if self.interactive:
            width = max((len(n) for n in totals), default=0)
            for position, (name, total) in enumerate(totals.items()):
                self._bars[name] = tqdm(
                    total=total,
                    desc=name.ljust(width),
                    position=position,
                    file=self.stream,
                    unit="item",
                    dynamic_ncols=True,
                    leave=True,
                )

    def update(self, model: str, status: str, cached: bool) -> None:
        tally = self.tallies[model]
        tally.done += 1
        tally.errors += status == "error"
        tally.infra += status == "infra_error"
        tally.cached += cached
        bar = self._bars.get(model)
        if bar is not None:
            bar.set_postfix(flawed=tally.errors, infra=tally.infra, cached=tally.cached, refresh=False)
            bar.update(1)
        elif time.monotonic() - self._last_log >= self.interval_s:
            self.log_all()

    def log_all(self) -> None:
        self._last_log = time.monotonic()
        for name, tally in self.tallies.items():
            print(tally.line(name), file=self.stream, flush=True)

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()
        if not self.interactive:
            self.log_all()
