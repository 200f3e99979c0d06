"""``python -m judge.calibrate`` is kept as a name for ``python -m pool.calibrate``.

Calibrating a judge sends its requests through the pool's scheduler, so the tool lives in ``pool``
(which may use ``judge``; ``judge`` uses only ``eval``). This module only hands the command line
over, by module name, without importing ``pool``.
"""

from __future__ import annotations

import runpy

if __name__ == "__main__":
    runpy.run_module("pool.calibrate", run_name="__main__", alter_sys=True)
