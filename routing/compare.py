"""``python -m routing.compare``: what changed between two runs, and whether it is significant.

The command keeps its short name at the top of ``routing``; its code is :mod:`routing.nights.compare`, and code that
needs it imports from there.
"""

from __future__ import annotations

import sys

from routing.nights.compare import build_parser, main

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
