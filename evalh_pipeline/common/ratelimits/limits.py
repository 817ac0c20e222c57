"""The rate limits of one run: a :class:`Limiter` per limit, shared by the variants and judges
that meet it, and the one way a call goes through its limit (:func:`call_within_limit`).

A limit is named by a pool (``pool:`` on a system, judge or embedder: ``run.executor.pools``)
or, by default, by the endpoint's host and the credential in use. A credential is told apart
from another by a keyed hash whose key lives only in this process: nothing derived from it
is written anywhere; a run's record names a credential by its order of appearance.

With a pools database (``pools_url``), a pool's limits hold across every process of the run
that reaches it (common/ratelimits/shared.py); the endpoints' adaptive limits stay each
process's own.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Generic, TypeVar, overload
from urllib.parse import urlsplit

from evalh_pipeline.errors import UserError
from evalh_pipeline.common.ratelimits.answers import RateLimitAnswer
from evalh_pipeline.common.ratelimits.limiter import Gate, Limiter, LimitGaveUp
from evalh_pipeline.common.ratelimits.settings import PoolLimits, RateLimitSettings
from evalh_pipeline.common.ratelimits.shared import DatabasePools, SharedPool

T = TypeVar("T")


class UnknownPool(UserError, ValueError):
    """A system or judge names a pool that ``run.executor.pools`` does not define."""


class RateLimits:
    """The limiters of one run (or one stage of it), made on first use.

    ``pools_url``: the database where the pools are counted for every process of the run
    (``sqlite:///<file>``, ``postgresql://...``; None: in this process only), under
    ``scope`` (the run: pools of different runs never share a count).
    """

    def __init__(self, settings: RateLimitSettings | None = None, pools: Mapping[str, PoolLimits] | None = None,
                 *, max_concurrency: int = 4, pools_url: str | None = None, scope: str = "") -> None:
        self.settings = settings or RateLimitSettings()
        self.pools = dict(pools or {})
        self.max_concurrency = max(1, max_concurrency)
        self.pools_url = pools_url
        self.scope = scope
        self._database: DatabasePools | None = None
        self.limiters: dict[tuple[str, ...], Limiter] = {}
        # The run's max_concurrency over every limiter's calls (when limits have lanes of their own).
        self.gate = Gate(self.max_concurrency)
        self.started_at = datetime.now(timezone.utc)
        self._salt = secrets.token_bytes(16)
        self._credentials: dict[str, dict[bytes, int]] = {}  # host -> credential digest -> its number

    def pool(self, name: str) -> Limiter:
        """The limiter of the pool ``name``."""
        key = ("pool", name)
        found = self.limiters.get(key)
        if found is None:
            limits = self.pools.get(name)
            if limits is None:
                known = ", ".join(sorted(self.pools)) or "none defined"
                raise UnknownPool(f"unknown pool {name!r} (run.executor.pools: {known})")
            ceiling = min(self.max_concurrency, limits.max_concurrency or self.max_concurrency)
            found = self.limiters[key] = self._limiter(f"pool {name}", ceiling, limits.requests_per_second,
                                                       limits.tokens_per_minute, self._shared(name, limits))
        return found

    def _shared(self, name: str, limits: PoolLimits) -> SharedPool | None:
        if self.pools_url is None:
            return None
        if self._database is None:
            self._database = DatabasePools(self.pools_url)
        return SharedPool(self._database, f"{self.scope}/{name}", limits)

    def close(self) -> None:
        """Close this process's connections to the pools database (if any)."""
        if self._database is not None:
            self._database.close()

    def endpoint(self, url: str, credential: str | None) -> Limiter:
        """The limiter of ``url``'s host (and port) with ``credential`` (any text that differs
        between keys: an Authorization header, an API key; None: no credential)."""
        parts = urlsplit(url)
        host = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
        digest = hmac.new(self._salt, (credential or "").encode(), hashlib.sha256).digest()
        key = ("endpoint", host, digest.hex())
        found = self.limiters.get(key)
        if found is None:
            numbers = self._credentials.setdefault(host, {})
            number = numbers.setdefault(digest, len(numbers) + 1)
            label = host if credential is None else f"{host} (credential {number})"
            found = self.limiters[key] = self._limiter(label, self.max_concurrency, None)
        return found

    def unlimited(self, name: str) -> Limiter:
        """A limiter that only counts ``name``'s calls against the run's max_concurrency (a
        system with no known limit, run beside limited ones); not in the run's record."""
        key = ("unlimited", name)
        found = self.limiters.get(key)
        if found is None:
            found = self.limiters[key] = Limiter(f"{name} (no limit)", ceiling=self.max_concurrency, adaptive=False,
                                                 gate=self.gate)
        return found

    @overload
    def scoped(self, pool: str | None, url: str, credential: str | None) -> Limiter: ...
    @overload
    def scoped(self, pool: str | None, url: str | None, credential: str | None) -> Limiter | None: ...
    def scoped(self, pool: str | None, url: str | None, credential: str | None) -> Limiter | None:
        """The pool's limiter if one is named, else the endpoint's (None: neither)."""
        if pool is not None:
            return self.pool(pool)
        if url is not None:
            return self.endpoint(url, credential)
        return None

    def _limiter(self, label: str, ceiling: int, rps: float | None, tpm: int | None = None,
                 shared: SharedPool | None = None) -> Limiter:
        s = self.settings
        return Limiter(label, ceiling=ceiling, start=s.start_concurrency, adaptive=s.adaptive, retry=s.retry,
                       requests_per_second=rps, budget_seconds=s.budget_seconds, max_wait_seconds=s.max_wait_seconds,
                       gate=self.gate, tokens_per_minute=tpm, shared=shared)

    def records(self, stage: str) -> list[dict[str, Any]]:
        """One record per limit used (its totals and its level over time), for the run's record."""
        found = []
        for key, limiter in self.limiters.items():
            stats = limiter.stats
            if stats.requests == 0 or key[0] == "unlimited":
                continue
            found.append({
                "stage": stage, "limit": limiter.label, "started_at": self.started_at.isoformat(),
                "ceiling": limiter.ceiling, "adaptive": limiter.adaptive,
                "requests_per_second": round(1 / limiter.interval, 6) if limiter.interval else None,
                "tokens_per_minute": limiter.tokens_per_minute, "tokens": stats.tokens,
                "requests": stats.requests, "succeeded": stats.succeeded, "rate_limited": stats.rate_limited,
                "max_in_flight": stats.max_in_flight, "capped_waits": stats.capped_waits,
                "gave_up": limiter.gave_up, "shared": limiter.shared is not None,
                "levels": [[t, level] for t, level in stats.levels],
                "paces": [[t, pace] for t, pace in stats.paces],
            })
        return found


@dataclass
class LimitedCall(Generic[T]):
    """How a call went through its limit: the last attempt's result (None: no attempt was
    allowed), the attempts, the rate limits met, the time spent queued and paused."""

    result: T | None
    attempts: int = 0
    rate_limited: int = 0
    waited_s: float = 0.0
    gave_up: str | None = None  # why no further attempt was made, when it was the limit's doing
    sent_at: float | None = None  # the limiter's clock when the last attempt was sent


async def call_within_limit(
    limiter: Limiter, attempt: Callable[[float], Awaitable[T]],
    answer_of: Callable[[T], tuple[RateLimitAnswer | None, str]], *, timeout: float, retry: bool,
    tokens_of: Callable[[T], int | None] | None = None,
) -> LimitedCall[T]:
    """``attempt(seconds_left)`` once the limit allows, again after each rate limit (``answer_of``:
    the rate limit a result reports, with its message) while ``retry`` and the time allow.

    ``timeout`` bounds the call from its first request to its last: a rate limit whose pause
    would end past it ends the call (the result is the last rate-limited one). Waiting for a
    first slot does not count against it (it is the run's queue, not the call's), but is
    counted in ``waited_s`` like every wait. ``tokens_of``: the tokens an answer reports it
    used (None: not said), for a limit with ``tokens_per_minute``.
    """
    outcome: LimitedCall[T] = LimitedCall(result=None)
    give_up_at: float | None = None
    while True:
        try:
            ticket = await limiter.acquire(hold_s=timeout)
        except LimitGaveUp as exc:
            outcome.gave_up = str(exc)
            return outcome
        now = limiter.clock()
        outcome.waited_s += ticket.queued_s
        if give_up_at is None:
            give_up_at = now + timeout
        elif now >= give_up_at:  # the call's time ran out while it queued for another attempt
            await limiter.give_back(ticket)
            limiter.unused(ticket)
            return outcome
        outcome.sent_at = now
        try:
            result = await attempt(max(0.001, give_up_at - now))
        except BaseException:
            limiter.drop_lease(ticket)
            limiter.release(ticket, succeeded=False)
            raise
        outcome.result = result
        outcome.attempts += 1
        answer, message = answer_of(result)
        if answer is None:
            tokens = tokens_of(result) if tokens_of is not None else None
            await limiter.give_back(ticket, tokens)
            limiter.release(ticket, tokens=tokens)
            return outcome
        await limiter.give_back(ticket)
        outcome.rate_limited += 1
        pause = limiter.release(ticket, rate_limited=True, retry_after=answer.retry_after, message=message)
        if limiter.gave_up is not None:
            outcome.gave_up = limiter.gave_up
            return outcome
        if not retry or limiter.clock() + pause >= give_up_at:
            return outcome
