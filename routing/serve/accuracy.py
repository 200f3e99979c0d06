"""``python -m routing.serve.accuracy --data SUITE [...]``: how well the router's classifier finds a suite's buckets.

Reads the suite with :mod:`eval.loaders`, gives every item its bucket path (finest bucket, specialty
system, family — as :data:`routing.boards.leaderboard.BUCKET_KINDS` names them) and prints the
cross-validated accuracy per level: k-fold (seeded, stratified by bucket, the routing validation's
deal) and leave-one-out. It needs no run and no model: it says, before serving, how often a
question of this suite would reach its own bucket's winner by classification alone.
Exit codes: 0 success; 2 the suite cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eval.items import Item
from eval.items.scores import FAMILY_OF_GOLD_TYPE
from eval.loaders import load_items
from routing.boards.leaderboard import BUCKET_KINDS
from routing.decide.validation import assign_folds
from routing.serve.classifier import DEFAULT_NEIGHBOURS, BucketPath, accuracy, out_of_fold_guesses
from routing.serve.texts import request_text


def item_path(item: Item) -> BucketPath:
    """The bucket path the routing build gives this item's scores."""
    family = FAMILY_OF_GOLD_TYPE[item.gold_type]
    kind, column = BUCKET_KINDS[family][0]
    name = {"task": item.task, "gold_type": item.gold_type, "domain": item.domain or "(none)"}[column]
    system = f"specialty/system/{(item.domain or '(none)').split(':', 1)[0]}" if family == "specialty" else ""
    return BucketPath(f"{family}/{kind}/{name}", system, family)


def suite_accuracy(
    items: Sequence[Item], k: int = 5, seed: int = 0, neighbours: int = DEFAULT_NEIGHBOURS
) -> dict[str, Any]:
    """k-fold and leave-one-out accuracy per level, with the counts behind them."""
    texts = [request_text(item.chat_messages()) for item in items]
    paths = [item_path(item) for item in items]
    strata = np.unique([p.bucket for p in paths], return_inverse=True)[1]
    out: dict[str, Any] = {
        "items": len(items),
        "buckets": len({p.bucket for p in paths}),
        "systems": len({p.system for p in paths if p.system}),
        "neighbours": neighbours,
    }
    for name, folds in ((f"{k}-fold", assign_folds(strata, k, seed)), ("leave-one-out", np.arange(len(items)))):
        labels, _ = out_of_fold_guesses(texts, paths, folds, neighbours=neighbours)
        out[name] = {level: None if v is None else round(v, 4) for level, v in accuracy(labels, paths).items()}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m routing.serve.accuracy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", nargs="+", required=True, metavar="PATH", help="suite files or folders")
    parser.add_argument("--folds", type=int, default=5, help="k of the k-fold estimate (default %(default)s)")
    parser.add_argument(
        "--neighbours", type=int, default=DEFAULT_NEIGHBOURS, help="voting neighbours (default %(default)s)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        items = [i for i in load_items([Path(p) for p in args.data]).items if i.scorable]
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if len(items) < 2:
        print(
            f"error: {', '.join(args.data)}: fewer than two scorable items; nothing to cross-validate", file=sys.stderr
        )
        return 2
    print(json.dumps(suite_accuracy(items, args.folds, args.seed, args.neighbours), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
