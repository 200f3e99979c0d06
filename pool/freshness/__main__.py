"""``python -m pool.freshness``: see :mod:`pool.freshness.cli` (its parser is named here too, so tools that
read a command's flags find them)."""

import sys

from pool.freshness.cli import build_parser, main

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
