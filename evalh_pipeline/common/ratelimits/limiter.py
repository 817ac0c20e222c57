"""One rate limit's controller: how many calls may be in flight, and when the next may go.

A :class:`Limiter` is shared by every caller (variants, judges) that meets the same limit.
Before a request is sent, :meth:`Limiter.acquire` waits until all of these hold:

- fewer calls are in flight than the current level (AIMD: the level grows by one per
  level's worth of successes, and halves on a rate limit, at most once per round of calls
  sent after the previous cut; never above the ceiling, never below 1);
- the pause a server asked for (``Retry-After``, capped) is over;
- with ``requests_per_second``, the request's turn in the fixed spacing has come.

Callers are served first come, first served. A limit that answers nothing but rate limits
for ``budget_seconds`` is given up: waiting and later calls fail at once with
:class:`LimitGaveUp`. The level's changes are kept (:attr:`Limiter.levels`) for the run's record.

All waiting happens on the running event loop (futures and one timer), without asyncio
locks, which bind to the first loop that waits on them: the judges of a run may call
under several event loops in turn, one after another.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

logger = logging.getLogger(__name__)

DECREASE = 0.5  # the multiplicative cut on a rate limit
DEFAULT_WAIT = 1.0  # the pause after a rate limit that says nothing of when to come back


class LimitGaveUp(Exception):
    """The limit answered nothing but rate limits for the run's budget: no more calls are sent."""


@dataclass
class Ticket:
    """One call's permission to send: the round it was sent in, and how long it queued."""

    epoch: int
    queued_s: float


@dataclass
class LimiterStats:
    """What went through one limit during a stage."""

    requests: int = 0
    succeeded: int = 0
    rate_limited: int = 0
    max_in_flight: int = 0
    capped_waits: int = 0
    # (seconds since the limiter was made, level) at each change of the whole level.
    levels: list[tuple[float, int]] = field(default_factory=list)


class Limiter:
    """The controller of one rate limit (an endpoint and credential, or a named pool)."""

    def __init__(self, label: str, *, ceiling: int, start: int | None = None, adaptive: bool = True,
                 retry: bool = True, requests_per_second: float | None = None, budget_seconds: float = 300.0,
                 max_wait_seconds: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.label = label
        self.ceiling = max(1, ceiling)
        self.adaptive = adaptive
        self.retry = retry  # callers send again after a rate limit (call_within_limit)
        self.level = float(min(self.ceiling, max(1, start if start is not None else self.ceiling)))
        self.interval = 1.0 / requests_per_second if requests_per_second else 0.0
        self.budget_seconds = budget_seconds
        self.max_wait_seconds = max_wait_seconds
        self.clock = clock
        self.created = clock()
        self.in_flight = 0
        self.epoch = 0
        self.stats = LimiterStats(levels=[(0.0, int(self.level))])
        self.gave_up: str | None = None
        self.last_message = ""
        self._paused_until = 0.0
        self._next_send = 0.0
        self._refused_since: float | None = None
        self._waiters: deque[tuple[asyncio.Future[Ticket], float]] = deque()  # (granted, asked at)
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------------ sending

    async def acquire(self) -> Ticket:
        """Wait for this limit to allow one more request; raises :class:`LimitGaveUp`."""
        if self.gave_up is not None:
            raise LimitGaveUp(self.gave_up)
        asked = self.clock()
        if not self._waiters and self._may_send(asked):
            return self._take(asked, asked)
        future: asyncio.Future[Ticket] = asyncio.get_running_loop().create_future()
        waiter = (future, asked)
        self._waiters.append(waiter)
        self._dispatch()
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled() and future.exception() is None:
                self.in_flight -= 1  # granted as it was cancelled: hand the slot on
                self._dispatch()
            else:
                try:
                    self._waiters.remove(waiter)
                except ValueError:
                    pass
            raise

    def release(self, ticket: Ticket, *, rate_limited: bool = False, retry_after: float | None = None,
                message: str = "", succeeded: bool = True) -> float:
        """Hand the slot back with the call's outcome; returns the pause a rate limit set
        (seconds from now; 0 otherwise)."""
        self.in_flight -= 1
        now = self.clock()
        pause = 0.0
        if rate_limited:
            pause = self._limited(ticket, now, retry_after, message)
        elif succeeded:
            self.stats.succeeded += 1
            self._refused_since = None
            if self.adaptive and self.level < self.ceiling:
                self._set_level(min(self.ceiling, self.level + 1.0 / self.level), now)
        self._dispatch()
        return pause

    def pause_left(self) -> float:
        """Seconds until the server's pause is over (0: none)."""
        return max(0.0, self._paused_until - self.clock())

    # ------------------------------------------------------------------ internals

    def _limited(self, ticket: Ticket, now: float, retry_after: float | None, message: str) -> float:
        self.stats.rate_limited += 1
        if message:
            self.last_message = message
        wait = DEFAULT_WAIT if retry_after is None else retry_after
        if wait > self.max_wait_seconds:
            if self.stats.capped_waits == 0:
                logger.warning("rate limit of %s: the server asked to wait %.0f s; waiting %.0f s "
                               "(run.rate_limits.max_wait_seconds)", self.label, wait, self.max_wait_seconds)
            self.stats.capped_waits += 1
            wait = self.max_wait_seconds
        self._paused_until = max(self._paused_until, now + wait)
        if self.adaptive and ticket.epoch == self.epoch:  # one cut per round of calls sent
            self.epoch += 1
            self._set_level(max(1.0, self.level * DECREASE), now)
        if self._refused_since is None:
            self._refused_since = now
        elif now - self._refused_since >= self.budget_seconds:
            self._give_up(f"{self.label} answered only rate limits for {now - self._refused_since:.0f} s "
                          f"(run.rate_limits.budget_seconds: {self.budget_seconds:g})")
        return self._paused_until - now

    def _give_up(self, reason: str) -> None:
        self.gave_up = reason
        waiters, self._waiters = self._waiters, deque()
        for future, _ in waiters:
            if not future.done():
                future.set_exception(LimitGaveUp(reason))

    def _set_level(self, level: float, now: float) -> None:
        if int(level) != int(self.level):
            self.stats.levels.append((round(now - self.created, 3), int(level)))
        self.level = level

    def _may_send(self, now: float) -> bool:
        return (self.in_flight < max(1, int(self.level)) and now >= self._paused_until
                and now >= self._next_send)

    def _take(self, now: float, asked: float) -> Ticket:
        self.in_flight += 1
        self.stats.requests += 1
        self.stats.max_in_flight = max(self.stats.max_in_flight, self.in_flight)
        if self.interval:
            self._next_send = max(now, self._next_send) + self.interval
        return Ticket(self.epoch, now - asked)

    def _dispatch(self) -> None:
        """Grant waiting calls in order while the limit allows; else set the timer for when time
        (a pause or the spacing), not a free slot, is what they wait for."""
        now = self.clock()
        while self._waiters:
            head, asked = self._waiters[0]
            if head.done():  # cancelled while queued
                self._waiters.popleft()
                continue
            if not self._may_send(now):
                break
            self._waiters.popleft()
            head.set_result(self._take(now, asked))
        if self._waiters and self.in_flight < max(1, int(self.level)):
            self._wake_at(max(self._paused_until, self._next_send))

    def _wake_at(self, when: float) -> None:
        loop = asyncio.get_running_loop()
        if self._timer is not None and self._timer_loop is loop:
            self._timer.cancel()
        delay = max(0.0, when - self.clock())
        self._timer = loop.call_later(delay if math.isfinite(delay) else 0.0, self._dispatch)
        self._timer_loop = loop
