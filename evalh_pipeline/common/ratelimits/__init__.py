"""Rate limits as providers impose them: telling a rate-limit answer apart (answers.py), one
controller per limit (limiter.py), and a run's limits with the call loop (limits.py)."""

from evalh_pipeline.common.ratelimits.answers import RateLimitAnswer, rate_limit_of, retry_after_seconds
from evalh_pipeline.common.ratelimits.limiter import Limiter, LimitGaveUp
from evalh_pipeline.common.ratelimits.limits import LimitedCall, RateLimits, UnknownPool, call_within_limit
from evalh_pipeline.common.ratelimits.settings import PoolLimits, RateLimitSettings

__all__ = ["LimitGaveUp", "LimitedCall", "Limiter", "PoolLimits", "RateLimitAnswer", "RateLimitSettings",
           "RateLimits", "UnknownPool", "call_within_limit", "rate_limit_of", "retry_after_seconds"]
