"""``python -m pool.calibrate --pool FILE [--set PATH | --set criteria]``: the calibration CLI.

It reads the command line and hands it to one of the two calibrations: claims (the default,
:mod:`pool.calibrate.claims`) or criteria (``--set criteria``, :mod:`pool.calibrate.criteria`).
A CLI at the edge, like ``pool.run``; ``python -m judge.calibrate`` hands its command line over here.

Exit codes: 0 calibrated and stored; 1 some judge calls failed (nothing stored); 2 bad input;
130 interrupted.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from judge.calibration.store import default_store_dir
from pool.calibrate.claims import DEFAULT_SET, calibrate_claims
from pool.calibrate.criteria import (
    CRITERIA_SET,
    DEFAULT_ITEMS,
    DEFAULT_PER_ITEM,
    DEFAULT_SEED,
    DEFAULT_SUITE,
    calibrate_criteria,
)

DEFAULT_POOL = "model_pool.yaml"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pool.calibrate",
        description="Send labelled claims to the pool's judge (claim-level contract) and measure P/R/F1 on "
        "'unsupported', 3-class accuracy and the confusion matrix, per tier; store the result under the judge's "
        "identity. With --set criteria: send synthetic answers whose criteria are known to every judge of the pool "
        "(and its panel) and measure per-criterion P/R/F1 per kind (topic, warning, forbidden) beside the holistic "
        "coverage's Spearman ρ. A judge that returns token logprobs is also measured probability-weighted, side by "
        "side: AUC of P(met) (claims: P(unsupported)), P/R/F1 at 0.5 and at the Youden-optimal threshold, which is "
        "stored with the judge's identity and used by its runs to cut P(met).",
        epilog="Exit codes: 0 stored; 1 some judge calls failed (nothing stored); 2 bad input; 130 interrupted.",
    )
    parser.add_argument(
        "--pool",
        default=DEFAULT_POOL,
        help="pool file whose judge: is calibrated (with --set criteria: also "
        f"every member of a judges: panel, and the panel) (default: ./{DEFAULT_POOL})",
    )
    parser.add_argument(
        "--set",
        dest="set_path",
        metavar="PATH|criteria",
        help=f"calibration set: a file of labelled claims (default: {DEFAULT_SET} when present), or the word "
        f"'{CRITERIA_SET}' for the criteria calibration set built from --suite (judge.calibration.criteria_set)",
    )
    criteria = parser.add_argument_group(f"criteria calibration (only with --set {CRITERIA_SET})")
    criteria.add_argument(
        "--suite", metavar="PATH", help=f"criteria items to build answers from (default: {DEFAULT_SUITE})"
    )
    criteria.add_argument(
        "--items", type=int, metavar="N", help=f"the first N criteria items of the suite (default: {DEFAULT_ITEMS})"
    )
    criteria.add_argument(
        "--per-item", type=int, metavar="K", help=f"synthetic answers per item (default: {DEFAULT_PER_ITEM})"
    )
    criteria.add_argument(
        "--seed", type=int, metavar="S", help=f"seed of the answers' composition (default: {DEFAULT_SEED})"
    )
    parser.add_argument("--store", metavar="DIR", help=f"calibration store folder (default: {default_store_dir()})")
    parser.add_argument("--no-cache", action="store_true", help="ask the judge again instead of reusing cached replies")
    parser.add_argument("--cache-dir", help="response cache folder (default: $MEDPOOL_CACHE_DIR or ~/.cache/medpool)")
    parser.add_argument(
        "--json", action="store_true", help="print the stored calibration as JSON instead of the summary"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.set_path == CRITERIA_SET:
        return calibrate_criteria(args)
    return calibrate_claims(args)
