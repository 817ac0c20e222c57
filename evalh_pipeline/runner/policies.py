"""Run-level policies around each system call: retry with backoff, and the cost limit."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from evalh_pipeline.config.schema import RetryConfig


@dataclass
class RetryPolicy:
    """Retry a cell whose error type is listed in ``on``, with exponential backoff and jitter."""

    config: RetryConfig
    rng: random.Random = field(default_factory=random.Random)

    def should_retry(self, error_type: str, attempt: int) -> bool:
        return attempt < self.config.max_attempts and error_type in self.config.on

    def delay(self, attempt: int) -> float:
        base = self.config.backoff_seconds * (2 ** (attempt - 1))
        return base * (0.5 + self.rng.random() / 2)


@dataclass
class CostBudget:
    """A soft run-level cap: once spent reaches the limit, queued cells are not started."""

    limit_usd: float | None
    spent_usd: float = 0.0

    def exhausted(self) -> bool:
        return self.limit_usd is not None and self.spent_usd >= self.limit_usd

    def add(self, cost: float | None) -> None:
        if cost:
            self.spent_usd += cost
