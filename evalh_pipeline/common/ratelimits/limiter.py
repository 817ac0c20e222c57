"""One rate limit's controller: how many calls may be in flight, and when the next may go.

A :class:`Limiter` is shared by every caller (variants, judges) that meets the same limit.
Before a request is sent, :meth:`Limiter.acquire` waits until all of these hold:

- fewer calls are in flight than the current level;
- the pause a server asked for (``Retry-After``, capped) is over;
- the request's turn has come in the spacing of the pace: a pool's ``requests_per_second``
  and, once the limit answered a rate limit, the rate it was seen to allow;
- with a pool's ``tokens_per_minute``, its token bucket holds the tokens the request is
  expected to use (see below).

A token limit is a bucket of ``tokens_per_minute`` tokens, full at the start and refilled at
that many a minute, as providers keep theirs. What a request will use is known only from its
answer, so each request reserves the mean of the tokens the answers of this limit reported
so far, and its answer settles the difference (a rate-limited or failed call gives its
reservation back). Until a first answer reports its tokens, one request is in flight at a
time: there is nothing yet to reserve by. So over any minute the tokens sent stay within the
limit but for the estimate's error on the calls in flight; a run's answers that report no
usage are not limited by tokens (with a warning, once).

Providers limit requests (and tokens) per second, where concurrency is only the rate times
how long a call holds its slot, and their token buckets refuse bursts: so a rate limit sets
a pace as well as cutting the level. Both start unlimited (the level at ``start``, by default
the ceiling), so a server without a limit is never slowed. On a rate limit, at most once per
round of calls sent after the previous cut (AIMD):

- the pace becomes the rate of successes over the last seconds (once there are five seconds
  of them), held between half and 0.95 of the pace before; without such a measure, 0.9 of
  it, and the first time one request per ``retry-after`` (a token bucket's wait is one
  token's time), or one a second when the server gives no wait under a second. Successes
  raise it by 30 % of the way back to the pace before the cut a second (at least 2 %), and
  from a pace of one a second guessed, by one request a second per success (a doubling a
  second) until the next cut;
- the level is cut to twice what the limit was seen to carry (that rate times the mean time
  a success held its slot), held between half and 0.9 of the level (half when nothing was
  measured); successes grow it by 30 % of the way back to the level before the cut per round
  (at least one), then by one per round. Never above the ceiling, never below 1.

A pool's limiter with a :class:`~evalh_pipeline.common.ratelimits.shared.SharedPool` also
takes a lease from the pools database once this process allows the call (common/ratelimits/
shared.py): the pool's limits then hold across every process of the run.

With a :class:`Gate`, the limiters of a run also share one bound on the calls in flight
across all of them (the run's ``max_concurrency``).

Callers are served first come, first served. A limit that answers nothing but rate limits
for ``budget_seconds`` is given up: waiting and later calls fail at once with
:class:`LimitGaveUp`. The level's changes are kept (``stats.levels``) for the run's record.

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

from evalh_pipeline.common.ratelimits.shared import Lease, SharedPool
from evalh_pipeline.errors import InfrastructureError

logger = logging.getLogger(__name__)

DECREASE = 0.5  # the deepest cut on a rate limit (level and pace)
SHALLOWEST_CUT = 0.9  # the least a rate limit cuts the level by
SHALLOWEST_PACE_CUT = 0.95  # the least a rate limit cuts the pace by
HEADROOM = 2.0  # the level after a cut, over the concurrency the limit was seen to carry
REGROWTH = 0.3  # of the way back to the level before the last cut, per round of successes
PACE_GROWTH = 0.02  # of the pace, a second: the least it grows while answers succeed
WINDOW_S = 5.0  # the successes whose rate is measured: the last seconds (at least 2 mean durations)
DEFAULT_WAIT = 1.0  # the pause after a rate limit that says nothing of when to come back


class LimitGaveUp(InfrastructureError):
    """The limit answered nothing but rate limits for the run's budget: no more calls are sent."""


class Gate:
    """The calls in flight across several limiters, at most ``capacity``; a call leaving one
    limiter wakes the calls waiting in the others."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, capacity)
        self.in_flight = 0
        self.limiters: list[Limiter] = []

    def leave(self, limiter: Limiter) -> None:
        self.in_flight -= 1
        for other in self.limiters:
            if other is not limiter and other._waiters:
                other._dispatch()


@dataclass
class Ticket:
    """One call's permission to send: the round it was sent in, how long it queued, when it
    went, and the tokens it reserved (a limit with ``tokens_per_minute``)."""

    epoch: int
    queued_s: float
    sent_at: float = 0.0
    reserved: float = 0.0
    lease: Lease | None = None  # the pool's lease in the pools database (a shared pool)


@dataclass
class LimiterStats:
    """What went through one limit during a stage."""

    requests: int = 0
    succeeded: int = 0
    rate_limited: int = 0
    max_in_flight: int = 0
    capped_waits: int = 0
    tokens: int = 0  # the tokens the answers reported (a limit with tokens_per_minute)
    # (seconds since the limiter was made, level) at each change of the whole level.
    levels: list[tuple[float, int]] = field(default_factory=list)
    # (seconds since the limiter was made, requests a second) at each cut of the pace.
    paces: list[tuple[float, float]] = field(default_factory=list)


class Limiter:
    """The controller of one rate limit (an endpoint and credential, or a named pool)."""

    def __init__(self, label: str, *, ceiling: int, start: int | None = None, adaptive: bool = True,
                 retry: bool = True, requests_per_second: float | None = None, budget_seconds: float = 300.0,
                 max_wait_seconds: float = 60.0, clock: Callable[[], float] = time.monotonic,
                 gate: Gate | None = None, tokens_per_minute: int | None = None,
                 shared: SharedPool | None = None) -> None:
        self.label = label
        self.shared = shared
        self.gate = gate
        if gate is not None:
            gate.limiters.append(self)
        self.ceiling = max(1, ceiling)
        self.adaptive = adaptive
        self.retry = retry  # callers send again after a rate limit (call_within_limit)
        self.level = float(min(self.ceiling, max(1, start if start is not None else self.ceiling)))
        self.interval = 1.0 / requests_per_second if requests_per_second else 0.0  # a pool's fixed spacing
        self.tokens_per_minute = tokens_per_minute
        self._tokens = float(tokens_per_minute or 0)  # in the bucket now (negative: owed)
        self._tokens_at = clock()  # when the bucket was last refilled
        self._per_call: float | None = None  # the mean tokens an answer reported (None: none yet)
        self._no_usage_warned = False
        self.pace: float | None = None  # requests a second the limit was seen to allow (None: unpaced)
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
        self._pace_slow_start = False  # the pace was guessed at one a second: double it a second
        self._pace_at_cut = 0.0
        self._level_at_cut = 0.0
        self._successes: deque[float] = deque()  # when each recent success ended
        self._first_success: float | None = None
        self._duration: float | None = None  # the mean time a successful call held its slot (EWMA)
        self._waiters: deque[tuple[asyncio.Future[Ticket], float]] = deque()  # (granted, asked at)
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    # ------------------------------------------------------------------ sending

    async def acquire(self, hold_s: float = 300.0) -> Ticket:
        """Wait for this limit to allow one more request; raises :class:`LimitGaveUp`.

        With a shared pool, the ticket carries the pool's lease, held at most ``hold_s`` (the
        call's timeout): hand it back with :meth:`give_back` before :meth:`release`."""
        ticket = await self._acquire_here()
        if self.shared is None:
            return ticket
        try:
            ticket.lease = await self.shared.lease(tokens=ticket.reserved, hold_s=hold_s)
        except BaseException:
            self.unused(ticket)
            raise
        now = self.clock()
        ticket.queued_s += now - ticket.sent_at
        ticket.sent_at = now
        return ticket

    async def give_back(self, ticket: Ticket, tokens: int | None = None) -> None:
        """Return the ticket's lease on the shared pool (``tokens``: what the answer reported it
        used; None: nothing counted); nothing to do without one."""
        lease, ticket.lease = ticket.lease, None
        if lease is not None and self.shared is not None:
            await self.shared.release(lease, tokens_used=tokens)

    def drop_lease(self, ticket: Ticket) -> None:
        """Return the ticket's lease without waiting (the call raised or was cancelled)."""
        lease, ticket.lease = ticket.lease, None
        if lease is not None and self.shared is not None:
            self.shared.release_soon(lease)

    async def _acquire_here(self) -> Ticket:
        """What this process allows: a slot under the level, the pause, the pace and the tokens."""
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
                self._leave()  # granted as it was cancelled: hand the slot on
                self._dispatch()
            else:
                try:
                    self._waiters.remove(waiter)
                except ValueError:
                    pass
            raise

    def release(self, ticket: Ticket, *, rate_limited: bool = False, retry_after: float | None = None,
                message: str = "", succeeded: bool = True, tokens: int | None = None) -> float:
        """Hand the slot back with the call's outcome (``tokens``: what its answer reported it
        used); returns the pause a rate limit set (seconds from now; 0 otherwise)."""
        self._leave()
        now = self.clock()
        if self.tokens_per_minute:
            self._settle(ticket, None if rate_limited or not succeeded else tokens)
        pause = 0.0
        if rate_limited:
            pause = self._limited(ticket, now, retry_after, message)
        elif succeeded:
            self.stats.succeeded += 1
            self._refused_since = None
            if self.adaptive:
                self._measure(ticket, now)
                self._grow(now)
        self._dispatch()
        return pause

    def unused(self, ticket: Ticket) -> None:
        """Hand back a slot that sent nothing (the caller's time ran out while it queued)."""
        self._leave()
        if self.tokens_per_minute:
            self._tokens = min(float(self.tokens_per_minute), self._tokens + ticket.reserved)
        self.stats.requests -= 1
        self._dispatch()

    def pause_left(self) -> float:
        """Seconds until the server's pause is over (0: none)."""
        return max(0.0, self._paused_until - self.clock())

    # ------------------------------------------------------------------ outcomes

    def _settle(self, ticket: Ticket, tokens: int | None) -> None:
        """The reservation given back, the tokens used taken: the bucket as if the call had
        reserved exactly what it used."""
        # Never above a full bucket: it may have refilled to full while the call was out.
        self._tokens = min(float(self.tokens_per_minute or 0), self._tokens + ticket.reserved)
        if tokens is None or tokens < 0:
            if tokens is None and ticket.reserved == 0 and self._per_call is None and not self._no_usage_warned:
                self._no_usage_warned = True
                logger.warning("%s has tokens_per_minute but an answer reported no token usage: "
                               "its calls are not held back by tokens until one does", self.label)
            return
        self._tokens -= tokens
        self.stats.tokens += tokens
        self._per_call = float(tokens) if self._per_call is None else 0.9 * self._per_call + 0.1 * tokens

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
            self._cut(now, wait)
        if self._refused_since is None:
            self._refused_since = now
        elif now - self._refused_since >= self.budget_seconds:
            self._give_up(f"{self.label} answered only rate limits for {now - self._refused_since:.0f} s "
                          f"(run.rate_limits.budget_seconds: {self.budget_seconds:g})")
        return self._paused_until - now

    def _measure(self, ticket: Ticket, now: float) -> None:
        """Note one success: when it ended, and how long it held its slot."""
        duration = now - ticket.sent_at
        self._duration = duration if self._duration is None else 0.9 * self._duration + 0.1 * duration
        if self._first_success is None:
            self._first_success = now
        self._successes.append(now)
        horizon = now - max(WINDOW_S, 2 * self._duration)
        while self._successes and self._successes[0] < horizon:
            self._successes.popleft()

    def _success_rate(self, now: float) -> float | None:
        """Successes a second over the last seconds (None: too little measured)."""
        if self._duration is None or self._first_success is None:
            return None
        window = max(WINDOW_S, 2 * self._duration)
        if now - self._first_success < window:
            return None
        return sum(1 for ended in self._successes if ended >= now - window) / window

    def _cut(self, now: float, wait: float) -> None:
        rate = self._success_rate(now)
        self._level_at_cut = self.level
        floor = 1.0 / self.max_wait_seconds  # so a paced call never waits longer than a pause may last
        self._pace_slow_start = False
        if rate is None:
            level = self.level * DECREASE
            if self.pace is not None:
                pace = self.pace * SHALLOWEST_CUT
            elif 0 < wait <= 1:
                pace = 1.0 / wait
            else:
                pace, self._pace_slow_start = 1.0, True
        else:
            carried = HEADROOM * rate * (self._duration or 0.0)
            level = min(self.level * SHALLOWEST_CUT, max(self.level * DECREASE, carried))
            pace = rate if self.pace is None else max(self.pace * DECREASE, min(self.pace * SHALLOWEST_PACE_CUT, rate))
        self._pace_at_cut = self.pace or 0.0
        self.pace = max(floor, pace)
        self.stats.paces.append((round(now - self.created, 3), round(self.pace, 3)))
        self._set_level(max(1.0, level), now)

    def _grow(self, now: float) -> None:
        if self.level < self.ceiling:
            step = max(1.0, REGROWTH * (self._level_at_cut - self.level)) / self.level
            self._set_level(min(float(self.ceiling), self.level + step), now)
        if self.pace is not None:
            # A success comes about every 1/pace s: a step of x/pace per success is x a second.
            if self._pace_slow_start:
                self.pace += 1.0
            else:
                self.pace += max(PACE_GROWTH * self.pace, REGROWTH * (self._pace_at_cut - self.pace)) / self.pace

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

    # ------------------------------------------------------------------ granting

    def _may_send(self, now: float) -> bool:
        return (self.in_flight < max(1, int(self.level)) and now >= self._paused_until
                and now >= self._next_send and now >= self._tokens_ready(now)
                and (self.gate is None or self.gate.in_flight < self.gate.capacity))

    def _reservation(self) -> float:
        """What the next request reserves: the mean an answer used, at most a full bucket (so a
        request larger than the bucket waits for a full one, not forever)."""
        return min(self._per_call or 0.0, float(self.tokens_per_minute or 0))

    def _tokens_ready(self, now: float) -> float:
        """When the bucket will hold the next request's reservation (now or earlier: it does).
        Before any answer reported its tokens, only one request at a time goes."""
        if not self.tokens_per_minute:
            return now
        if self._per_call is None:
            # Nothing to reserve by yet: one request learns the size (a slot frees, not time
            # passing); answers that report no usage leave nothing to limit by.
            return now if self.in_flight == 0 or self._no_usage_warned else math.inf
        capacity = float(self.tokens_per_minute)
        self._tokens = min(capacity, self._tokens + (now - self._tokens_at) * capacity / 60.0)
        self._tokens_at = now
        missing = self._reservation() - self._tokens
        return now if missing <= 0 else now + missing * 60.0 / capacity

    def _take(self, now: float, asked: float) -> Ticket:
        self.in_flight += 1
        if self.gate is not None:
            self.gate.in_flight += 1
        self.stats.requests += 1
        self.stats.max_in_flight = max(self.stats.max_in_flight, self.in_flight)
        spacing = max(self.interval, 1.0 / self.pace if self.pace else 0.0)
        if spacing:
            self._next_send = max(now, self._next_send) + spacing
        reserved = self._reservation() if self.tokens_per_minute else 0.0
        self._tokens -= reserved
        return Ticket(self.epoch, now - asked, now, reserved)

    def _leave(self) -> None:
        self.in_flight -= 1
        if self.gate is not None:
            self.gate.leave(self)

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
            ready = self._tokens_ready(now)
            if math.isfinite(ready):  # else a call in flight wakes them when it is released
                self._wake_at(max(self._paused_until, self._next_send, ready))

    def _wake_at(self, when: float) -> None:
        loop = asyncio.get_running_loop()
        if self._timer is not None and self._timer_loop is loop:
            self._timer.cancel()
        delay = max(0.0, when - self.clock())
        self._timer = loop.call_later(delay if math.isfinite(delay) else 0.0, self._dispatch)
        self._timer_loop = loop
