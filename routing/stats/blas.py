"""Run a block with single-threaded BLAS: many small solves lose more to thread wake-ups than they gain.

Bradley–Terry fits solve stacks of m × m systems (a few dozen models) and work on vectors of a
few thousand entries. OpenBLAS still wakes its worker threads for some of those calls, and on a
busy machine (CI, or a pool run on the same cores) each wake-up costs milliseconds: a 3-model fit
measured 16–40 ms with the default threads against 0.35 ms with one. ``threadpoolctl`` limits the
BLAS pools for the block only and restores them after, so the large matrix products elsewhere keep
their threads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import threadpool_limits


@contextmanager
def single_threaded_blas() -> Iterator[None]:
    with threadpool_limits(limits=1, user_api="blas"):
        yield
