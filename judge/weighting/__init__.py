"""Probability-weighted verdicts: what a judge's token probabilities say beyond its top answer.

A judge asked with ``top_logprobs`` (``runners.base.GenerationParams``) returns, for every token of
its verdict, the most likely alternatives at that position. Where a verdict field's value was
generated, those alternatives are the judge's distribution over the field's possible values:

- a 0–10 rubric dimension becomes the expected value Σ v·P(v) over the score tokens, renormalised
  over the valid scores 0..10 among the alternatives (G-Eval's weighting);
- a met / not-met judgement (a criterion's ``met``, a probe's ``success``/``failure``, a claim's
  label) becomes P(yes), renormalised over the yes- and no-tokens.

Missing logprobs, a reply whose tokens do not spell its text, a field whose position cannot be found,
or no valid token among the alternatives: the weighted value is absent, never invented.

Rooms:

- ``positions``     — where each value of a verdict's JSON text starts, and which token generated it
- ``distributions`` — the value distribution at a token: a 0–10 score (multi-token "10" handled), labels
- ``verdicts``      — per contract: rubric dimensions and total, criteria items' ``p_met``, a probe's
                      P(success), claims' P(supported)
- ``scores``        — a judged Score with its weighted values beside the argmax ones (``details.weighted``),
                      and its value and pass read from them (``details.score_variant``)
"""

from judge.weighting.distributions import AMBIGUOUS_MAX, expected_score, label_probabilities, p_yes
from judge.weighting.positions import TokenView, tokens_of, value_spans
from judge.weighting.scores import score_dims, weighted_score
from judge.weighting.verdicts import (
    WEIGHTED_CONTRACTS,
    weigh_claims,
    weigh_criteria_items,
    weigh_probe,
    weigh_rubric,
    weigh_verdict,
)

__all__ = [
    "AMBIGUOUS_MAX",
    "WEIGHTED_CONTRACTS",
    "TokenView",
    "expected_score",
    "label_probabilities",
    "p_yes",
    "score_dims",
    "tokens_of",
    "value_spans",
    "weigh_claims",
    "weigh_criteria_items",
    "weigh_probe",
    "weigh_rubric",
    "weigh_verdict",
    "weighted_score",
]
