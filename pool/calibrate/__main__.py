"""``python -m pool.calibrate``: see :mod:`pool.calibrate.cli` (its parser is named here too, so tools that
read a command's flags find them)."""

import sys

from pool.calibrate.cli import build_parser, main

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
