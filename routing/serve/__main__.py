"""``python -m routing.serve`` is the name of ``python -m pool.serve``, the router (docs/router.md).

Serving forwards to the pool's endpoints, so the server lives in ``pool`` (which may use ``routing``;
``routing`` makes no model calls). This module only hands the command line over, by module name,
without importing ``pool``.
"""

from __future__ import annotations

import runpy

if __name__ == "__main__":
    runpy.run_module("pool.serve", run_name="__main__", alter_sys=True)
