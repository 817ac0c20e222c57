"""A bounded worker pool over an iterator: constant memory however long the iterator is."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


async def run_bounded(items: Iterable[T], worker: Callable[[T], Awaitable[None]], concurrency: int) -> None:
    """Run ``worker`` on every item with at most ``concurrency`` in flight.

    Items are pulled lazily, so a million-case dataset never becomes a million tasks.
    ``worker`` must not raise; if it does, the pool stops and the error propagates.
    """
    iterator = iter(items)

    async def lane() -> None:
        for item in iterator:  # shared iterator: each lane takes the next item when free
            await worker(item)

    await asyncio.gather(*(lane() for _ in range(max(1, concurrency))))
