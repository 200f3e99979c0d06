"""judges: how far the judge's scores can be trusted, from what the runs already hold.

``agreement`` (Krippendorff's α, Fleiss' κ: pure functions) → ``panel_agreement`` (how a judge
panel's members agree) → ``reliability`` (length bias, family conflict, parse ladder, flags,
re-judging agreement, calibration, weighted vs argmax scores: the ``judge_reliability`` block) →
``objective`` (objective checks and decision recognition beside the judge's verdicts on the same answers).
"""
