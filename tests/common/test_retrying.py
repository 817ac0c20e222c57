"""The one retry policy: how many attempts, which failures, and the jittered doubling pause."""

from __future__ import annotations

import asyncio
import random

import pytest

from evalh_pipeline.common.retrying import Backoff, retry_on_exception, retry_on_result


class Flaky(Exception):
    pass


def test_the_pause_doubles_and_stays_within_half_to_all_of_it():
    backoff = Backoff(attempts=5, backoff_seconds=0.5, rng=random.Random(7))
    for attempt, full in ((1, 0.5), (2, 1.0), (3, 2.0)):
        pauses = [backoff.delay(attempt) for _ in range(200)]
        assert all(full / 2 <= p <= full for p in pauses)
        assert max(pauses) - min(pauses) > full / 4  # jittered, not constant


def test_a_retryable_exception_is_retried_until_the_call_succeeds():
    calls = []

    async def call():
        calls.append(1)
        if len(calls) < 3:
            raise Flaky("try again")
        return "ok"

    result = asyncio.run(retry_on_exception(call, Backoff(attempts=3), lambda exc: isinstance(exc, Flaky)))
    assert (result, len(calls)) == ("ok", 3)


def test_out_of_attempts_the_last_exception_propagates_as_raised():
    calls = []

    async def call():
        calls.append(1)
        raise Flaky(f"attempt {len(calls)}")

    with pytest.raises(Flaky, match="attempt 2"):
        asyncio.run(retry_on_exception(call, Backoff(attempts=2), lambda exc: isinstance(exc, Flaky)))


def test_an_exception_not_worth_retrying_propagates_at_once():
    calls = []

    async def call():
        calls.append(1)
        raise ValueError("bad request")

    with pytest.raises(ValueError):
        asyncio.run(retry_on_exception(call, Backoff(attempts=5), lambda exc: isinstance(exc, Flaky)))
    assert len(calls) == 1


def test_a_failing_result_is_retried_and_the_last_one_returned_with_the_attempt_count():
    seen = []

    async def call(attempt: int) -> str:
        seen.append(attempt)
        return "error"

    result, attempts = asyncio.run(retry_on_result(call, Backoff(attempts=3), lambda r: r == "error"))
    assert (result, attempts, seen) == ("error", 3, [1, 2, 3])


def test_a_good_result_ends_the_retries():
    async def call(attempt: int) -> str:
        return "error" if attempt == 1 else "fine"

    assert asyncio.run(retry_on_result(call, Backoff(attempts=4), lambda r: r == "error")) == ("fine", 2)
