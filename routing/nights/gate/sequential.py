"""The sequential gate: evidence that accumulates over nights, with false alarms held at α however often it looks.

Testing every night and alarming on any night inflates false alarms (``python -m bench.gate``: the
nightly fixed-n gate alarms in 53% of 30-night healthy sequences of three models, a fixed-sample test
of the accumulated means in 17%; this gate in 0.7%). This gate uses an anytime-valid e-value instead, so the
chance of *ever* alarming on an unchanged model stays ≤ α.

Per comparison (bucket × model identity × judge), each night contributes its mean score x̄ₜ on the
paired items and an estimate of that mean's variance, σₜ² = s_d²/(2n), from the night's paired
differences with the night before (for two nights of an unchanged model Var(x̄ₜ − x̄ₜ₋₁) = 2σ²; with
deterministic answers only the answers that flip count). The first ``reference_nights`` (W) nights
form the reference; every later night is monitored. With σ̄² the mean of the nights' σₜ² (floored),
after T monitored nights:

- D = m_ref − m_mon (the reference nights' mean score minus the monitored nights'), with variance
  V = σ̄²/W + σ̄²/T and information I = 1/V; the model's level μ is a nuisance that D does not depend on;
- the e-value for "no drop" is the Gaussian-mixture Bayes factor with a flat (right-Haar) prior on μ
  and a N(0, ``min_drop``²) prior on the drop: E = √(ρ/(ρ + I))·exp(I²·D²/(2(ρ + I))), ρ = 1/min_drop².
  With the location nuisance integrated out by its right-Haar measure, this is a test martingale
  under "no drop" whatever μ (Pérez-Ortiz, Lardy, de Heide & Grünwald 2024, "E-statistics, group
  invariance and anytime-valid testing", Ann. Statist. 52(4); the normal mixture is Robbins 1970), so
  by Ville's inequality P(∃T: E_T ≥ 1/α') ≤ α'. Inverting it gives a confidence sequence for the drop,
  D ± r, r = √((ρ + I)/I²·(log((ρ + I)/ρ) + 2·log(1/α'))) (Howard, Ramdas, McAuliffe & Sekhon 2021,
  Ann. Statist. 49(2), the normal-mixture boundary);
- α' = α/m, m the comparisons tested that night (Bonferroni, Holm's first step);
- ``regressed`` when D − r > 0 (the e-value crossed 1/α' on the side of a drop); the alarm stays until
  the state is reset. Otherwise ``no change`` when the largest drop still compatible, D + r, is ≤
  ``min_drop``, else ``inconclusive``. While the reference fills: ``reference k/W``.

The reference's own noise (σ̄²/W) never shrinks, so a drop well below ~2.5·σ̄/√W stays out of reach
however many nights pass; more reference nights lower that floor. σ̄² is a plug-in estimate and the
nightly means are taken as Gaussian (means of hundreds of items); ``python -m bench.gate`` checks the
false-alarm rate by simulation.

State: ``ROOT/gate_sequential.json`` beside the run index (``index.jsonl``), written atomically. A
night already counted is not counted again (re-running a comparison is harmless); a change of the
data fingerprint starts a new state; a new model identity or judge is a new comparison; deleting the
file resets every comparison.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.files import atomic_write_text
from routing.nights.gate.detectable import INCONCLUSIVE, NO_CHANGE, REGRESSED

STATE_FILENAME = "gate_sequential.json"
STATE_KIND, STATE_SCHEMA = "medpool-gate-sequential", 1
DEFAULT_REFERENCE_NIGHTS = 7
_VARIANCE_FLOOR = 1e-8  # nights whose answers never flipped still get a bound of non-zero width
_MIN_PRIOR_SD = 0.005  # --min-drop 0 still gets a proper prior on the drop


class SequentialStateError(ValueError):
    """A state file that cannot be read; the message names it and what to do."""


@dataclass(frozen=True)
class NightMean:
    """One comparison's evidence from one night: its mean over the paired items and that mean's variance."""

    key: str  # bucket \t identity key \t judge key
    bucket: str
    model: str
    run_id: str
    mean: float
    variance: float
    n: int


def night_variance(diff_variance: float, n: int) -> float:
    """σ² of one night's mean from the paired differences with the night before: s_d²/(2n)."""
    return 0.0 if n <= 0 or not math.isfinite(diff_variance) else diff_variance / (2.0 * n)


def mixture_radius(information: float, rho: float, alpha: float) -> float:
    """r of the normal-mixture confidence sequence (module docstring) at information I = ``information``."""
    v = rho + information
    return math.sqrt(v / information**2 * (math.log(v / rho) + 2.0 * math.log(1.0 / alpha)))


def assess(
    reference: Sequence[Sequence[float]],
    monitored: Sequence[Sequence[float]],
    *,
    alpha: float,
    min_drop: float,
    reference_nights: int,
) -> dict[str, Any]:
    """The gate's word on one comparison from its nightly (mean, variance) pairs (module docstring); pure."""
    out: dict[str, Any] = {"reference_nights": len(reference), "monitored_nights": len(monitored)}
    if len(reference) < reference_nights:
        return {**out, "status": f"reference {len(reference)}/{reference_nights}", "drop": None, "drop_bound": None}
    w, t = len(reference), len(monitored)
    m_ref = sum(m for m, _ in reference) / w
    variance = max(_VARIANCE_FLOOR, sum(v for _, v in (*reference, *monitored)) / (w + t))
    out.update(reference_mean=m_ref, reference_se=math.sqrt(variance / w))
    if not monitored:
        return {**out, "status": INCONCLUSIVE, "drop": None, "drop_bound": None}
    m_mon = sum(m for m, _ in monitored) / t
    information = 1.0 / (variance / w + variance / t)
    drop = m_ref - m_mon
    radius = mixture_radius(information, 1.0 / max(min_drop, _MIN_PRIOR_SD) ** 2, alpha)
    status = REGRESSED if drop - radius > 0 else NO_CHANGE if drop + radius <= min_drop else INCONCLUSIVE
    return {**out, "monitored_mean": m_mon, "status": status, "drop": drop, "drop_interval": [drop - radius,
            drop + radius], "drop_bound": max(0.0, drop + radius)}  # fmt: skip


def read_state(path: Path) -> dict[str, Any]:
    """The state file, or an empty state when it is absent (raises :class:`SequentialStateError` when broken)."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise SequentialStateError(
            f"{path}: not a readable sequential gate state ({exc}); delete it to start the sequence again"
        ) from exc
    if not isinstance(state, dict) or state.get("kind") != STATE_KIND or not isinstance(state.get("entries"), dict):
        raise SequentialStateError(f"{path}: not a {STATE_KIND} file; delete it to start the sequence again")
    return state


def advance(
    state: Mapping[str, Any],
    base: Sequence[NightMean],
    new: Sequence[NightMean],
    *,
    data_fingerprint: str | None,
    alpha: float,
    min_drop: float,
    reference_nights: int = DEFAULT_REFERENCE_NIGHTS,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the next state, the gate's word per comparison tonight). ``base``/``new``: the two nights' means of
    the comparisons tested tonight. The base night seeds a comparison's reference when it is new."""
    notes = []
    if state and state.get("data_fingerprint") != data_fingerprint:
        notes.append("data fingerprint changed: the sequence starts again")
        state = {}
    entries: dict[str, Any] = {k: dict(v) for k, v in (state.get("entries") or {}).items()}
    level = alpha / max(1, len(new))
    words = []
    base_by_key = {b.key: b for b in base}
    for night in new:
        entry = entries.setdefault(night.key, {"bucket": night.bucket, "model": night.model, "nights": []})
        nights = [list(x) for x in entry["nights"]]
        seen = {x[0] for x in nights}
        before = base_by_key.get(night.key)
        if not nights and before is not None:
            nights.append([before.run_id, before.mean, night.variance, before.n])
            seen.add(before.run_id)
        if night.run_id not in seen:
            nights.append([night.run_id, night.mean, night.variance, night.n])
        entry.update(model=night.model, nights=nights)
        pairs = [(x[1], x[2]) for x in nights]
        word = assess(
            pairs[:reference_nights], pairs[reference_nights:], alpha=level, min_drop=min_drop,
            reference_nights=reference_nights,
        )  # fmt: skip
        if word["status"] == REGRESSED and not entry.get("alarm_run"):
            entry["alarm_run"] = night.run_id
        if entry.get("alarm_run"):
            word["status"] = REGRESSED
        word.update(bucket=night.bucket, model=night.model, alarm_run=entry.get("alarm_run"), level=level)
        entries[night.key] = entry
        words.append(word)
    next_state = {
        "kind": STATE_KIND,
        "schema_version": STATE_SCHEMA,
        "data_fingerprint": data_fingerprint,
        "reference_nights": reference_nights,
        "notes": notes,
        "entries": entries,
    }
    return next_state, words


def write_state(path: Path, state: Mapping[str, Any]) -> None:
    atomic_write_text(path, json.dumps(state, indent=1, ensure_ascii=False) + "\n")
