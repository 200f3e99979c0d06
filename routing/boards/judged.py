"""Ratings from judged battles: win rates and Bradley–Terry where a judge compared two answers side by side.

The battles of ``pairwise.json`` come from absolute scores (the higher score wins); two models the
judge scores 9 and 9 are always tied there. *Judged* battles (``python -m pool.pairwise``,
``judge.pairwise``) are the judge's own comparison of the two answers, asked in both orders: a win
only where both orders agree, else a tie. The two kinds are never mixed: this module takes judged
battles only, and everything it returns says ``battles: judged``.

Same arithmetic as :mod:`routing.stats.rating_fits`: win rate = points / games (a tie ½ to each
side); Bradley–Terry with ties as half wins and one virtual tie per pair that met, reported on the
Elo scale, with a battle-level bootstrap (multinomial over the deduplicated outcome counts: judged
battles are few and not every pair meets on every item) and ranks from non-overlapping intervals.

:func:`read_judged` reads the judged battles of run folders (``battles.jsonl``: per judge and battle
``judge``, ``item_id``, ``a``, ``b``, and ``ab`` / ``ba``, the verdict with ``a`` / ``b`` shown first: ``A``,
``B``, ``tie`` or null); a damaged row is a ``LoadError`` naming ``path:line`` and the field.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from judge.pairwise import PairVerdicts
from routing.load.rows import LoadError
from routing.stats.intervals import json_number
from routing.stats.rating_fits import (
    LOSS,
    TIE,
    WIN,
    battle_counts,
    bootstrap_battle_counts,
    bradley_terry,
    overall_win_rates,
)

JUDGED = "judged"
BATTLES_FILENAME = "battles.jsonl"  # the pairwise stage's judged battles, one row per judge and battle
SIDES = ("A", "B", "tie", None)
CODE = {"a": WIN, "b": LOSS, "tie": TIE}


@dataclass(frozen=True)
class JudgedBattle:
    """One judged battle: models ``a`` and ``b`` on ``item_id``, ``outcome`` seen from ``a`` (a / b / tie)."""

    item_id: str
    a: str
    b: str
    outcome: str
    judge: str = ""


def judged_ratings(battles: Sequence[JudgedBattle], rounds: int = 200, seed: int = 0) -> dict[str, Any]:
    """``{"battles": "judged", "n_battles", "models": [{model, rating, ci, rank, win_rate, games}]}`` best first;
    ``models`` is empty without a battle."""
    labels = sorted({m for b in battles for m in (b.a, b.b)})
    out: dict[str, Any] = {"battles": JUDGED, "n_battles": len(battles), "models": []}
    if not battles:
        return out
    index = {label: i for i, label in enumerate(labels)}
    m = len(labels)
    counts = battle_counts(
        np.array([index[b.a] for b in battles]),
        np.array([index[b.b] for b in battles]),
        np.array([CODE[b.outcome] for b in battles]),
        m,
    )
    fit = bradley_terry(counts, bootstrap_battle_counts(counts, rounds, seed), m)
    rates = overall_win_rates(counts, m)
    games = np.zeros(m, dtype=int)
    for b in battles:
        games[index[b.a]] += 1
        games[index[b.b]] += 1
    rows = [
        {
            "model": label,
            "rating": json_number(round(float(fit["rating"][i]), 1)),
            "ci": [json_number(round(float(fit["lower"][i]), 1)), json_number(round(float(fit["upper"][i]), 1))],
            "rank": int(fit["rank"][i]),
            "win_rate": json_number(round(float(rates[i]), 4)),
            "games": int(games[i]),
        }
        for i, label in enumerate(labels)
    ]
    out["models"] = sorted(rows, key=lambda r: (-(r["rating"] or -np.inf), r["model"]))
    return out


def read_judged(run_dirs: Sequence[Path | str]) -> list[PairVerdicts]:
    """Every judged battle of ``run_dirs`` (module doc), in file order; [] when none has ``battles.jsonl``."""
    out: list[PairVerdicts] = []
    for run_dir in run_dirs:
        path = Path(run_dir) / BATTLES_FILENAME
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LoadError(
                    f"{where}: not JSON ({exc.msg}); run python -m pool.pairwise on the run again"
                ) from None
            for field in ("judge", "item_id", "a", "b"):
                if not isinstance(row.get(field), str):
                    raise LoadError(f"{where}: {field}: expected text, got {row.get(field)!r}; the file is damaged")
            for field in ("ab", "ba"):
                if row.get(field) not in SIDES:
                    raise LoadError(f"{where}: {field}: expected A, B, tie or null, got {row.get(field)!r}")
            out.append(PairVerdicts(row["judge"], row["item_id"], row["a"], row["b"], row["ab"], row["ba"]))
    return out
