"""``python -m routing.history``: list the runs recorded in a runs root's index.

The command keeps its short name at the top of ``routing``; its code is :mod:`routing.nights.history`, and code that
needs it imports from there.
"""

from __future__ import annotations

import sys

from routing.nights.history import build_parser, main

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
