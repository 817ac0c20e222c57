"""The controller of one limit: AIMD between 1 and its ceiling, pauses, spacing, giving up."""

from __future__ import annotations

import asyncio

import pytest

from evalh_pipeline.common.ratelimits import Limiter, LimitGaveUp, RateLimits, UnknownPool
from evalh_pipeline.common.ratelimits.settings import PoolLimits, RateLimitSettings


class Clock:
    """A clock the test moves by hand (the limiter's decisions read it)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_rate_limit_cuts_the_level_once_per_round_and_successes_grow_it_back():
    async def go():
        clock = Clock()
        limiter = Limiter("api", ceiling=8, clock=clock, max_wait_seconds=5)
        tickets = [await limiter.acquire() for _ in range(8)]
        assert limiter.in_flight == 8 and limiter.pace is None
        limiter.release(tickets[0], rate_limited=True, retry_after=0.05)
        limiter.release(tickets[1], rate_limited=True, retry_after=0.05)  # same round: no second cut
        assert int(limiter.level) == 4
        assert limiter.pace == 20  # nothing measured yet: one request per retry-after
        for ticket in tickets[2:]:
            clock.now += 0.01
            limiter.release(ticket)
        assert 4 < limiter.level < 8
        for _ in range(200):
            clock.now += 1
            limiter.release(await limiter.acquire())
        assert limiter.level == 8  # never above the ceiling
        return limiter

    limiter = asyncio.run(go())
    assert [level for _, level in limiter.stats.levels][:2] == [8, 4]


def test_a_cut_after_seconds_of_successes_paces_at_the_rate_they_came():
    async def go():
        clock = Clock()
        limiter = Limiter("api", ceiling=100, clock=clock, max_wait_seconds=5)
        for _ in range(100):  # 10 successes a second, each holding its slot 0.5 s
            ticket = await limiter.acquire()
            clock.now += 0.1
            ticket.sent_at = clock.now - 0.5
            limiter.release(ticket)
        limiter.release(await limiter.acquire(), rate_limited=True, retry_after=0.01)
        return limiter

    limiter = asyncio.run(go())
    assert limiter.pace == pytest.approx(10, rel=0.1)
    # The level keeps twice what the limit carried (10/s x 0.5 s), never less than half.
    assert int(limiter.level) == 50


def test_the_level_never_goes_below_one():
    async def go():
        clock = Clock()
        limiter = Limiter("api", ceiling=4, clock=clock)
        for _ in range(10):
            limiter.release(await limiter.acquire(), rate_limited=True, retry_after=0.5)
            clock.now += 10
        return limiter.level

    assert asyncio.run(go()) == 1


def test_calls_wait_for_a_free_slot_first_come_first_served():
    async def go():
        limiter = Limiter("pool", ceiling=2, adaptive=False)
        order, running, peak = [], 0, 0

        async def call(i):
            nonlocal running, peak
            ticket = await limiter.acquire()
            running += 1
            peak = max(peak, running)
            order.append(i)
            await asyncio.sleep(0)
            running -= 1
            limiter.release(ticket)

        await asyncio.gather(*(call(i) for i in range(10)))
        return order, peak

    order, peak = asyncio.run(go())
    assert peak == 2 and order == list(range(10))


def test_requests_per_second_spaces_the_sends():
    async def go():
        limiter = Limiter("pool", ceiling=10, requests_per_second=50)
        loop = asyncio.get_running_loop()
        sent = []
        for _ in range(5):
            ticket = await limiter.acquire()
            sent.append(loop.time())
            limiter.release(ticket)
        return sent

    sent = asyncio.run(go())
    gaps = [b - a for a, b in zip(sent, sent[1:])]
    assert all(gap >= 0.02 - 0.002 for gap in gaps)  # never closer than 1/50 s (timer resolution aside)


def test_a_pause_the_server_asked_for_holds_every_caller_of_the_limit():
    async def go():
        limiter = Limiter("api", ceiling=4, adaptive=False)
        limiter.release(await limiter.acquire(), rate_limited=True, retry_after=0.05)
        assert limiter.pause_left() > 0
        loop = asyncio.get_running_loop()
        asked = loop.time()
        limiter.release(await limiter.acquire())
        return loop.time() - asked

    assert asyncio.run(go()) >= 0.04


def test_a_wait_over_the_cap_is_capped():
    async def go():
        limiter = Limiter("api.example.com", ceiling=1, max_wait_seconds=0.01)
        pause = limiter.release(await limiter.acquire(), rate_limited=True, retry_after=7200)
        return pause, limiter.stats.capped_waits

    pause, capped = asyncio.run(go())
    assert pause == pytest.approx(0.01, abs=1e-6) and capped == 1


def test_a_limit_refusing_everything_for_the_budget_is_given_up_and_its_queue_emptied():
    async def go():
        clock = Clock()
        limiter = Limiter("api", ceiling=1, budget_seconds=10, clock=clock, max_wait_seconds=0.001)
        first = await limiter.acquire()
        queued = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0)
        limiter.release(first, rate_limited=True, retry_after=0, message="slow down")
        clock.now += 11
        second = await queued
        queued = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0)
        limiter.release(second, rate_limited=True, retry_after=0)
        with pytest.raises(LimitGaveUp):
            await queued
        with pytest.raises(LimitGaveUp, match="budget_seconds"):
            await limiter.acquire()
        return limiter

    limiter = asyncio.run(go())
    assert limiter.last_message == "slow down" and limiter.stats.rate_limited == 2


def test_a_success_restarts_the_budget():
    async def go():
        clock = Clock()
        limiter = Limiter("api", ceiling=1, budget_seconds=10, clock=clock, max_wait_seconds=0.001)
        limiter.release(await limiter.acquire(), rate_limited=True, retry_after=0)
        clock.now += 9
        limiter.release(await limiter.acquire())
        clock.now += 9
        limiter.release(await limiter.acquire(), rate_limited=True, retry_after=0)
        clock.now += 9
        return limiter.gave_up

    assert asyncio.run(go()) is None


def test_limits_are_shared_by_endpoint_and_credential_and_pools_by_name():
    limits = RateLimits(RateLimitSettings(start_concurrency=3), {"gpu": PoolLimits.model_validate(2)}, max_concurrency=10)
    a = limits.endpoint("https://api.openai.com/v1/chat/completions", "Bearer sk-1")
    assert limits.endpoint("https://api.openai.com/v1/embeddings", "Bearer sk-1") is a
    b = limits.endpoint("https://api.openai.com/v1/chat/completions", "Bearer sk-2")
    assert b is not a and (a.label, b.label) == ("api.openai.com (credential 1)", "api.openai.com (credential 2)")
    assert "sk-" not in a.label + b.label
    assert int(a.level) == 3 and a.ceiling == 10
    gpu = limits.scoped("gpu", "https://api.openai.com/v1", "Bearer sk-1")
    assert gpu is limits.pool("gpu") and gpu.ceiling == 2 and int(gpu.level) == 2
    with pytest.raises(UnknownPool, match="unknown pool 'cpu' \\(run.executor.pools: gpu\\)"):
        limits.pool("cpu")


def test_a_token_limit_sends_one_request_until_an_answer_says_its_size_then_reserves_the_mean():
    async def go():
        clock = Clock()
        limiter = Limiter("pool llm", ceiling=10, adaptive=False, clock=clock, tokens_per_minute=6000)
        first = await limiter.acquire()
        assert first.reserved == 0
        second = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0)
        assert not second.done()  # no size known yet: one request in flight at a time
        limiter.release(first, tokens=1000)
        ticket = await second
        assert ticket.reserved == 1000  # the mean so far
        # 6,000 a minute, full at the start: 1,000 used and 1,000 reserved leave 4,000.
        more = [await limiter.acquire() for _ in range(4)]
        assert all(t.reserved == 1000 for t in more)
        blocked = asyncio.ensure_future(limiter.acquire())
        await asyncio.sleep(0)
        assert not blocked.done()  # the bucket is empty: the fifth must wait for tokens, not a slot
        assert limiter._tokens_ready(clock.now) == pytest.approx(clock.now + 10.0)  # 1,000 at 100 a second
        clock.now += 10.0
        limiter._dispatch()
        await asyncio.sleep(0)
        assert blocked.done()
        for t in [ticket, *more, blocked.result()]:
            limiter.release(t, tokens=1000)
        return limiter

    limiter = asyncio.run(go())
    assert limiter.stats.tokens == 7000 and limiter.stats.requests == 7


def test_an_answer_settles_its_reservation_and_a_rate_limit_gives_it_back():
    async def go():
        clock = Clock()
        limiter = Limiter("pool llm", ceiling=10, adaptive=False, clock=clock, tokens_per_minute=600)
        limiter.release(await limiter.acquire(), tokens=100)
        assert limiter._tokens == pytest.approx(500)
        ticket = await limiter.acquire()
        assert ticket.reserved == 100 and limiter._tokens == pytest.approx(400)
        limiter.release(ticket, tokens=300)  # used more than it reserved: the bucket owes it
        assert limiter._tokens == pytest.approx(200)
        ticket = await limiter.acquire()
        limiter.release(ticket, rate_limited=True, retry_after=0.0)
        return limiter._tokens, limiter.stats.tokens

    tokens, used = asyncio.run(go())
    assert used == 400
    assert tokens == pytest.approx(200)  # the rate-limited call used nothing


def test_a_request_larger_than_the_bucket_waits_for_a_full_one_not_forever():
    async def go():
        clock = Clock()
        limiter = Limiter("pool llm", ceiling=4, adaptive=False, clock=clock, tokens_per_minute=600)
        limiter.release(await limiter.acquire(), tokens=5000)  # one answer used 8 minutes of quota
        return limiter._tokens_ready(clock.now) - clock.now

    waited = asyncio.run(go())
    assert waited == pytest.approx((600 + 4400) * 60 / 600)  # back to full (600) from -4,400


def test_answers_without_usage_leave_a_token_limit_unlimited_with_a_warning(caplog):
    async def go():
        limiter = Limiter("pool llm", ceiling=4, adaptive=False, tokens_per_minute=600)
        limiter.release(await limiter.acquire(), tokens=None)
        return [await limiter.acquire() for _ in range(4)]

    tickets = asyncio.run(go())
    assert len(tickets) == 4 and all(t.reserved == 0 for t in tickets)
    assert "reported no token usage" in caplog.text


def test_a_pool_takes_tokens_per_minute_and_needs_some_limit():
    assert PoolLimits.model_validate({"tokens_per_minute": 90000}).tokens_per_minute == 90000
    with pytest.raises(ValueError, match="tokens_per_minute"):
        PoolLimits.model_validate({})
    with pytest.raises(ValueError):
        PoolLimits.model_validate({"tokens_per_minute": 0})
    limits = RateLimits(RateLimitSettings(), {"llm": PoolLimits(tokens_per_minute=1000)}, max_concurrency=8)
    assert limits.pool("llm").tokens_per_minute == 1000
