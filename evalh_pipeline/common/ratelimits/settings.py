"""What a run says about rate limits: how to adapt and wait, and the named pools.

Both are eval.yaml sections (``run.rate_limits``, ``run.executor.pools``) validated by
these models when the eval loads.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator


class RateLimitSettings(BaseModel):
    """``run.rate_limits``: how a run meets the rate limits of the servers it calls."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    adaptive: bool = True
    """One AIMD controller per limit: halves its concurrency on a rate limit, grows it back while
    answers succeed. false: every limit stays at max_concurrency (or its pool's).
    """
    start_concurrency: int | None = Field(default=None, ge=1)
    """The concurrency each limit starts at (default: the run's max_concurrency, so a server
    without a limit is not slowed down); never above max_concurrency.
    """
    retry: bool = True
    """Wait and try again after a rate limit (within the cell's timeout); false: the cell errors
    `rate_limited` at the first one.
    """
    budget_seconds: float = Field(default=300.0, gt=0)
    """How long a limit may answer nothing but rate limits before the run gives up on it: its
    waiting and queued calls then end `rate_limited` at once.
    """
    max_wait_seconds: float = Field(default=60.0, gt=0)
    """The longest wait honoured; a server asking for more is waited on this long, with a warning."""


class PoolLimits(BaseModel):
    """A named limit shared by every system and judge that names it (``pool:``).

    eval-harness writes a pool as its capacity (``gpu: 2``), which is ``max_concurrency``.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    max_concurrency: int | None = Field(default=None, ge=1)
    """At most this many calls in flight at once."""
    requests_per_second: float | None = Field(default=None, gt=0)
    """At most this many calls started per second."""
    tokens_per_minute: int | None = Field(default=None, ge=1)
    """A provider's token quota: the input and output tokens the answers report, per minute
    (common/ratelimits/limiter.py says how a request is held back by it).
    """

    @model_validator(mode="before")
    @classmethod
    def _capacity(cls, data: Any) -> Any:
        if isinstance(data, bool):
            raise ValueError("a pool is a capacity (a whole number >= 1) or a mapping of "
                             "max_concurrency, requests_per_second and/or tokens_per_minute")
        if isinstance(data, int):
            return {"max_concurrency": data}
        return data

    @model_validator(mode="after")
    def _some_limit(self) -> PoolLimits:
        if self.max_concurrency is None and self.requests_per_second is None and self.tokens_per_minute is None:
            raise ValueError("a pool needs max_concurrency, requests_per_second and/or tokens_per_minute")
        return self
