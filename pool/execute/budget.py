"""What a run spends, and the cap that stops it issuing requests (``--max-cost``, ``--max-tokens-total``).

Cost of one call = prompt_tokens × input price / 10⁶ + completion_tokens × output price / 10⁶, with
the model's price from the pool file (:meth:`pool.config.PoolConfig.price_of`). Only calls sent
tonight count: a cache hit costs nothing. A call whose server reported no token counts adds 0
tokens and is counted in ``calls_without_usage``, so a budget over such a backend says it is blind.

When a cap is reached the driver stops issuing requests, lets the calls in flight finish and
record, and leaves every other unit unrecorded — pending, so ``--resume`` completes the plan
(with a fresh budget: the cap is per invocation, like a night's allowance).

A model without a ``price:`` adds nothing to ``--max-cost``'s tally (its cost is unknown, not 0), so
a cost cap over a partly priced pool can be overrun by the unpriced models' calls: the run says so
once, at its start (:meth:`Budget.unpriced_warning`), naming them; ``--max-tokens-total`` counts
every model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pool.config.schema import Price
from runners.base import GenerationResponse


class BudgetExhausted(RuntimeError):
    """The run reached its cost or token cap; ``not_run`` units were left for a resume."""

    def __init__(self, reason: str, not_run: int) -> None:
        super().__init__(f"{reason}; {not_run} unit(s) not run — resume with --resume to complete the plan")
        self.reason = reason
        self.not_run = not_run


def call_cost(price: Price | None, prompt_tokens: int | None, completion_tokens: int | None) -> float | None:
    """The price of one call, or None when the model has no price (unknown, not free)."""
    if price is None:
        return None
    return ((prompt_tokens or 0) * price.input_per_million + (completion_tokens or 0) * price.output_per_million) / 1e6


@dataclass
class Budget:
    """Spend so far against the caps; ``prices`` by pool model name (None: unpriced)."""

    prices: Mapping[str, Price | None]
    max_cost: float | None = None
    max_tokens_total: int | None = None
    cost: float = 0.0
    tokens: int = 0
    calls_without_usage: int = 0
    not_run: int = 0

    def charge(self, model: str, response: GenerationResponse) -> None:
        if response.prompt_tokens is None and response.completion_tokens is None:
            self.calls_without_usage += 1
        self.tokens += (response.prompt_tokens or 0) + (response.completion_tokens or 0)
        self.cost += call_cost(self.prices.get(model), response.prompt_tokens, response.completion_tokens) or 0.0

    def unpriced(self) -> list[str]:
        """The models (candidates and judges) without a price, sorted: invisible to ``--max-cost``."""
        return sorted(model for model, price in self.prices.items() if price is None)

    def unpriced_warning(self) -> str | None:
        """The start-of-run warning when ``--max-cost`` is set and some models have no price; else None."""
        unpriced = self.unpriced()
        if self.max_cost is None or not unpriced:
            return None
        return (
            f"--max-cost {self.max_cost:g} counts only priced models; {len(unpriced)} model(s) without a price "
            f"are not counted, whatever they spend: {', '.join(unpriced)}. Add `price: {{input_per_million: X, "
            "output_per_million: Y}` to their backend or model, or cap them with --max-tokens-total"
        )

    @property
    def exhausted(self) -> bool:
        return (self.max_cost is not None and self.cost >= self.max_cost) or (
            self.max_tokens_total is not None and self.tokens >= self.max_tokens_total
        )

    def reason(self) -> str:
        if self.max_cost is not None and self.cost >= self.max_cost:
            return f"cost cap reached: {self.cost:.4f} spent of --max-cost {self.max_cost:g}"
        return f"token cap reached: {self.tokens} tokens of --max-tokens-total {self.max_tokens_total}"
