"""``python -m routing.nightly``: index a finished run, compare it with the last comparable night.

The command keeps its short name at the top of ``routing``; its code is :mod:`routing.nights.nightly`, and code that
needs it imports from there.
"""

from __future__ import annotations

import sys

from routing.nights.nightly import build_parser, main

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
