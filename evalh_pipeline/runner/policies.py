"""Run-level policies around each system call: retry with backoff, and the cost limit."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalh_pipeline.common.retrying import Backoff
from evalh_pipeline.config.schema import RetryConfig
from evalh_pipeline.models import TraceError


@dataclass
class RetryPolicy:
    """Retry a cell whose error type is listed in ``on``, with the shared backoff (common/retrying.py)."""

    config: RetryConfig
    backoff: Backoff = field(init=False)

    def __post_init__(self) -> None:
        self.backoff = Backoff(attempts=self.config.max_attempts, backoff_seconds=self.config.backoff_seconds)

    def retries(self, error: TraceError | None) -> bool:
        """Whether a cell that ended with ``error`` is worth another attempt."""
        return error is not None and error.type in self.config.on


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
