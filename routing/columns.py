"""``python -m routing.columns``: write the columnar copy of run folders written before it existed.

The command keeps its short name at the top of ``routing``; its code is :mod:`routing.load.columns`, and code that
needs it imports from there.
"""

from __future__ import annotations

import sys

from routing.load.columns import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
