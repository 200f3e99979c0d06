"""Where a weighing judge's P(met) is cut: the threshold its criteria calibration chose, else 0.5.

A judge that asks for token logprobs (``JudgeSetup.top_logprobs``) gives each criterion of a
``criteria_items`` verdict a P(met) (``judge.weighting``). Its vote on a criterion is then
P(met) ≥ t rather than the token it wrote, with t the threshold ``python -m pool.calibrate --set
criteria`` chose for exactly this judge (same verdict stages, same ``criteria_items`` prompt version;
``judge.calibration.store.p_met_threshold``, read from the calibration store — ``--store`` there,
``$MEDPOOL_CALIBRATION_DIR`` here) and 0.5 when it has none. A criterion whose P(met) could not be
read keeps the written met / not met. The cut is per judge identity, so it is applied to each panel
member's votes before ``panel_rule`` combines them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from eval.items import Item
from judge.calibration.store import calibrations, default_store_dir, p_met_threshold
from judge.contracts.table import prompt_version
from judge.verdicts import CriteriaItemsVerdict
from pool.score.identity import JudgeSetup


@dataclass(frozen=True)
class PMetCut:
    """One judge's cut, and the calibration it came from (its judge key; None: the default 0.5)."""

    value: float
    calibration: str | None

    def to_record(self) -> dict[str, float | str | None]:
        return {"value": self.value, "calibration": self.calibration}


def p_met_cut(judge: JudgeSetup, criteria_item: Item) -> PMetCut:
    """``judge``'s cut (module doc); ``criteria_item`` is any criteria item of the run (it names the
    judge's holistic criteria stage, which its calibration lists among its run stages)."""
    value, key = p_met_threshold(
        calibrations(default_store_dir()), [judge.stage(criteria_item)], prompt_version("criteria_items")
    )
    return PMetCut(value, key)


def cut_verdict(verdict: CriteriaItemsVerdict, p_met: Mapping[str, float], cut: float) -> CriteriaItemsVerdict:
    """``verdict`` with each criterion whose P(met) was read judged met ⇔ P(met) ≥ ``cut``."""
    if not p_met:
        return verdict
    items = tuple(item._replace(met=p_met[item.id] >= cut) if item.id in p_met else item for item in verdict.items)
    return replace(verdict, items=items)
