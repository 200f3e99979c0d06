"""The gate's command-line options, shared by ``routing.compare``, ``routing.nightly`` and ``pool.run``.

Each option's type, default and metavar are written here once, so the commands cannot drift apart
(one refusing ``--min-drop 5`` while another takes it, or two defaults for the same drop). Each
command words the help for its own readers and adds an option where it stands in its ``--help``.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from routing.cli_types import SCORE_DIFFERENCE
from routing.nights.gate.detectable import DEFAULT_MIN_DROP
from routing.nights.gate.sequential import DEFAULT_REFERENCE_NIGHTS

GATE_OPTIONS: Mapping[str, Mapping[str, Any]] = {
    # given alone: 0, any significant regression; not given: the gate never fails the command
    "--fail-on-regression": {
        "nargs": "?",
        "const": 0.0,
        "default": None,
        "type": SCORE_DIFFERENCE,
        "metavar": "THRESHOLD",
    },
    "--min-drop": {"type": SCORE_DIFFERENCE, "default": DEFAULT_MIN_DROP, "metavar": "DROP"},
    "--fail-on-inconclusive": {"action": "store_true"},
    "--sequential": {"action": "store_true"},
    "--reference-nights": {"type": int, "default": DEFAULT_REFERENCE_NIGHTS, "metavar": "W"},
}


def add_gate_option(parser: argparse.ArgumentParser, flag: str, help: str) -> None:
    """Add the gate option ``flag`` (a key of :data:`GATE_OPTIONS`) to ``parser`` with this command's ``help``."""
    parser.add_argument(flag, help=help, **GATE_OPTIONS[flag])
