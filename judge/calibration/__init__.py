"""Calibrating a judge: sets whose truth is known, the metrics of a judge's labels on them, and
the store that keeps every calibration of a judge identity.

- ``claim_set``     — labelled atomic claims for the claim-level (``hallu``) contract; P/R/F1 on
                      ``unsupported`` and 3-class accuracy, per difficulty tier
- ``criteria_set``  — synthetic answers built from criteria items, each criterion's truth known by
                      construction; per-kind P/R/F1 and the holistic coverage's Spearman ρ
- ``probabilities`` — a judge's P(met) against the truth: AUC, the Youden-optimal threshold, the
                      weighted per-kind P/R/F1 and holistic ρ beside the plain ones
- ``store``         — one JSON file per judge identity, every calibration kept, drift flagged; the
                      P(met) threshold a run of that judge uses

The tool that sends the sets to a pool's judges is ``python -m pool.calibrate`` (calibrating goes
through the pool's scheduler, and ``judge`` imports only ``eval``).
"""
