"""One retry policy for every outbound call: the runner's system calls, judges and embedders.

A failed attempt is retried up to ``attempts`` in all, after a delay that doubles from
``backoff_seconds`` and is jittered to 50-100% of that, so callers that fail together do
not retry together. Built on tenacity; what is worth retrying is the caller's decision.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, retry_if_result, stop_after_attempt
from tenacity.wait import wait_base

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """How many attempts, and the delay before the second (doubling after that, jittered)."""

    attempts: int = 1
    backoff_seconds: float = 0.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def delay(self, attempt: int) -> float:
        """The pause after failed attempt number ``attempt`` (1-based)."""
        base = self.backoff_seconds * float(2 ** max(0, attempt - 1))
        return base * (0.5 + self.rng.random() / 2)


class _Jittered(wait_base):
    def __init__(self, backoff: Backoff, after: int = 0) -> None:
        self.backoff = backoff
        self.after = after  # attempts made before tenacity took over

    def __call__(self, retry_state: RetryCallState) -> float:
        return self.backoff.delay(retry_state.attempt_number + self.after)


async def retry_on_exception(
    call: Callable[[], Awaitable[T]], backoff: Backoff, retryable: Callable[[BaseException], bool]
) -> T:
    """``await call()``, again while it raises a ``retryable`` exception and attempts remain.

    The last exception propagates as it was raised.
    """
    retrying = AsyncRetrying(stop=stop_after_attempt(max(1, backoff.attempts)), wait=_Jittered(backoff),
                             retry=retry_if_exception(retryable), reraise=True)

    async def attempt() -> T:  # a coroutine function, whatever ``call`` is (a lambda, say)
        return await call()

    return await retrying(attempt)


async def retry_on_result(
    call: Callable[[int], Awaitable[T]], backoff: Backoff, retryable: Callable[[T], bool]
) -> tuple[T, int]:
    """``await call(attempt)`` again while its result is ``retryable`` and attempts remain.

    For calls that report failure in their result (a cell's error) instead of raising.
    Returns the last result and the number of attempts made.
    """
    # Most calls succeed at once: answer those without building tenacity's machinery, which
    # costs more per cell than the rest of the runner's bookkeeping (benchmarks/dagster_bench.py).
    first = await call(1)
    if backoff.attempts <= 1 or not retryable(first):
        return first, 1
    retrying = AsyncRetrying(stop=stop_after_attempt(backoff.attempts - 1), wait=_Jittered(backoff, after=1),
                             retry=retry_if_result(retryable), retry_error_callback=_last_result)
    await asyncio.sleep(backoff.delay(1))
    attempts = 1

    async def attempt() -> T:
        nonlocal attempts
        attempts += 1
        return await call(attempts)

    result: T = await retrying(attempt)
    return result, attempts


def _last_result(retry_state: RetryCallState) -> object:
    # Out of attempts on a result that is still a failure: that failure is the answer.
    assert retry_state.outcome is not None
    return retry_state.outcome.result()
