"""``python -m bench.gate``: the regression gate on simulated nights with known truth (:mod:`bench.gate.sims`).

Rows (seeded; ``--sims`` nights or sequences each):

- fixed-n: the false-alarm rate on healthy nights (any of the three models ``regressed``), how a
  healthy night is worded at ``--min-drop`` 0.05 and 0.15, and the share of nights a 10-point drop
  of one model is caught, at n = 300;
- MDD calibration: at the n where the exact McNemar MDD of a 10-point drop (0.65 → 0.55) is 0.10,
  the share caught (goal ≈ 0.80) and the mean MDD computed from each night's data; the same for
  continuous scores (differences N(−0.05, 0.2), paired t);
- sequential: over 30 looks (nights 1–30 after a first run), the share of healthy sequences with any
  alarm for the sequential gate (goal ≤ α = 0.05), for a naive fixed-sample test of the same
  accumulated means at the same level, and for the fixed-n gate looked at every night; then a
  5-point (and a 10-point) drop from night 11: share caught by night 30 and median nights to the alarm.

    python -m bench.gate                 # 1,000 per row; about 10 min on 2 busy cores
    python -m bench.gate --sims 200      # quicker, noisier
    python -m bench.gate --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from bench.gate.sims import continuous_calibration, fixed_n, n_for_mdd, sequential_rates
from routing.nights.gate.sequential import DEFAULT_REFERENCE_NIGHTS

NIGHTS, DROP_FROM = 30, 11


def rows(sims: int, reference_nights: int) -> list[tuple[str, dict[str, Any]]]:
    n_star = n_for_mdd(0.10)
    return [
        ("fixed-n healthy, min_drop 0.05", fixed_n(sims, 300, 0.0, 0.05, seed=1)),
        ("fixed-n healthy, min_drop 0.15", fixed_n(sims, 300, 0.0, 0.15, seed=1)),
        ("fixed-n 10-point drop", fixed_n(sims, 300, 0.10, 0.05, seed=2)),
        (f"MDD calibration, pass/fail n={n_star}", fixed_n(sims, n_star, 0.10, 0.05, seed=3)),
        ("MDD calibration, continuous", continuous_calibration(sims, 0.05, 0.2, seed=4)),
        ("sequential healthy", sequential_rates(sims, NIGHTS, 300, 0.0, NIGHTS + 1, reference_nights, 0.05, seed=5)),
        ("sequential 5-point drop", sequential_rates(sims, NIGHTS, 300, 0.05, DROP_FROM, reference_nights, 0.05, 6)),
        ("sequential 10-point drop", sequential_rates(sims, NIGHTS, 300, 0.10, DROP_FROM, reference_nights, 0.05, 7)),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=1000, help="nights or sequences per row (default %(default)s)")
    parser.add_argument(
        "--reference-nights",
        type=int,
        default=DEFAULT_REFERENCE_NIGHTS,
        help="sequential reference (default %(default)s)",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    args = parser.parse_args(argv)
    out = rows(max(1, args.sims), max(1, args.reference_nights))
    for name, row in out:
        figures = ", ".join(f"{k}={round(v, 4) if isinstance(v, float) else v}" for k, v in row.items())
        print(f"{name}: {figures}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([{"row": name, **row} for name, row in out], f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
