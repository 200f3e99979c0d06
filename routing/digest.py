"""``python -m routing.digest``: the end-of-run digest of a run's judged answers.

The command keeps its short name at the top of ``routing``; its code is :mod:`routing.report.digest`, and code that
needs it imports from there.
"""

from __future__ import annotations

import sys

from routing.report.digest import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
