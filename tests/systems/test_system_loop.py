"""The system loop of async python_function targets: calls cross over and back, and closing
the loop ends everything on it without a coroutine or task left for the garbage collector
to warn about ("never awaited", "Task was destroyed but it is pending")."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import inspect
import logging
import sys
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from evalh_pipeline.systems.system_loop import SystemLoop, SystemLoopClosed

# A safety net against a hang, never a measure of speed: nothing here waits this long when it works.
PATIENCE = 60.0


@pytest.fixture
def reported(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], list[str]]]:
    """``reported()``: after a garbage collection, what was warned about, ignored in a
    destructor ("Exception ignored in ...") or logged by asyncio (a destroyed pending task)."""
    gc.collect()  # what earlier tests left behind is not this test's to report
    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    caplog.set_level(logging.ERROR, logger="asyncio")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        def collect() -> list[str]:
            gc.collect()
            return ([f"{w.category.__name__}: {w.message}" for w in caught]
                    + [f"{u.exc_type.__name__} in {u.object!r}" for u in unraisable]
                    + [r.getMessage() for r in caplog.records if r.name == "asyncio"])

        yield collect


def new_loop() -> tuple[SystemLoop, str]:
    name = f"evalh-test-{uuid.uuid4().hex[:8]}-loop"
    return SystemLoop(name), name


def thread_named(name: str) -> threading.Thread | None:
    return next((t for t in threading.enumerate() if t.name == name), None)


def ended(name: str) -> bool:
    """Waits (bounded) for the loop's thread to end; True when it did."""
    thread = thread_named(name)
    if thread is not None:
        thread.join(PATIENCE)
    return thread is None or not thread.is_alive()


def started() -> tuple[concurrent.futures.Future[None], Callable[[], Any]]:
    """A future the target sets when it runs, and an awaitable of it for the caller."""
    flag: concurrent.futures.Future[None] = concurrent.futures.Future()
    return flag, lambda: asyncio.wait_for(asyncio.wrap_future(flag), PATIENCE)


def test_a_call_returns_the_targets_answer_and_raises_its_error(reported):
    async def answer() -> str:
        return threading.current_thread().name

    async def fail() -> None:
        raise ValueError("bad input")

    async def main() -> None:
        loop, name = new_loop()
        assert await loop.call(answer()) == name
        with pytest.raises(ValueError, match="bad input"):
            await loop.call(fail())
        await loop.close()
        assert ended(name)

    asyncio.run(main())
    assert reported() == []


def test_closing_with_a_call_running_cancels_it_and_tells_the_caller(reported):
    seen: list[str] = []
    running, is_running = started()

    async def forever() -> None:
        running.set_result(None)
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def main() -> None:
        loop, name = new_loop()
        coroutine = forever()
        caller = asyncio.create_task(loop.call(coroutine))
        await is_running()
        await loop.close()
        with pytest.raises(SystemLoopClosed, match="closed during this call"):
            await caller
        assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED
        assert ended(name)

    asyncio.run(main())
    assert seen == ["cancelled"]
    assert reported() == []


def test_a_call_after_close_is_refused_and_its_coroutine_closed(reported):
    async def answer() -> str:
        return "never"

    async def main() -> None:
        loop, name = new_loop()
        await loop.close()
        coroutine = answer()
        with pytest.raises(SystemLoopClosed, match="call was not made"):
            await loop.call(coroutine)
        assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED
        assert ended(name)

    asyncio.run(main())
    assert reported() == []


def test_a_call_posted_as_the_loop_closes_is_refused_not_dropped(reported):
    async def answer() -> str:
        return "never"

    async def main() -> None:
        loop, _ = new_loop()
        coroutine = answer()
        caller = asyncio.create_task(loop.call(coroutine))
        await asyncio.sleep(0)  # the call is posted; it goes over at this loop's next pass
        await loop.close()
        # Whether it started before the loop closed or not, the caller hears of it.
        with pytest.raises(SystemLoopClosed):
            await asyncio.wait_for(caller, PATIENCE)
        assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED

    asyncio.run(main())
    assert reported() == []


def test_a_call_still_on_its_way_when_the_loop_finishes_is_refused(reported):
    async def answer() -> str:
        return "never"

    async def main() -> None:
        loop, name = new_loop()
        coroutine = answer()
        caller = asyncio.create_task(loop.call(coroutine))
        await asyncio.sleep(0)  # the call is posted; it goes over at this loop's next pass
        loop.stop()
        # Joined without yielding: this loop's next pass has not come, so the call is still
        # on its way when the system loop finishes.
        assert ended(name)
        with pytest.raises(SystemLoopClosed, match="before this call started"):
            await asyncio.wait_for(caller, PATIENCE)
        assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED

    asyncio.run(main())
    assert reported() == []


def test_close_cancels_tasks_the_target_left_running(reported):
    seen: list[str] = []

    async def background() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async def leaves_a_task() -> str:
        leaves_a_task.task = asyncio.get_running_loop().create_task(background())  # type: ignore[attr-defined]
        await asyncio.sleep(0)  # let it start
        return "done"

    async def main() -> None:
        loop, name = new_loop()
        assert await loop.call(leaves_a_task()) == "done"
        await loop.close()
        assert ended(name)

    asyncio.run(main())
    del leaves_a_task.task  # type: ignore[attr-defined]
    assert seen == ["cancelled"]
    assert reported() == []


def test_an_async_generator_of_the_target_is_finalized_on_close(reported):
    seen: list[str] = []
    kept: list[Any] = []

    async def ticks() -> Any:
        try:
            yield 1
            yield 2
        finally:
            seen.append("finalized")

    async def starts_a_generator() -> int:
        generator = ticks()
        kept.append(generator)  # still referenced, suspended: only the loop's shutdown closes it
        return await generator.__anext__()

    async def main() -> None:
        loop, name = new_loop()
        assert await loop.call(starts_a_generator()) == 1
        assert seen == []
        await loop.close()
        assert ended(name)

    asyncio.run(main())
    assert seen == ["finalized"]
    kept.clear()
    assert reported() == []


def test_a_stopped_loop_lets_its_calls_in_flight_finish_then_ends(reported):
    running, is_running = started()
    go_on = threading.Event()

    async def slow() -> str:
        running.set_result(None)
        while not go_on.is_set():
            await asyncio.sleep(0.01)
        return "finished"

    async def answer() -> str:
        return "never"

    async def main() -> None:
        loop, name = new_loop()
        caller = asyncio.create_task(loop.call(slow()))
        await is_running()
        loop.stop()  # as when its target blocked it: no more calls, the ones in flight go on
        with pytest.raises(SystemLoopClosed):
            await loop.call(answer())
        go_on.set()
        assert await asyncio.wait_for(caller, PATIENCE) == "finished"
        assert await asyncio.to_thread(ended, name)

    asyncio.run(main())
    assert reported() == []


def test_close_returns_within_its_bound_when_the_target_blocks_the_loop(reported):
    running, is_running = started()
    release = threading.Event()

    async def blocks() -> str:
        running.set_result(None)
        release.wait()  # blocks the loop's thread, not just this call
        return "late"

    async def main() -> None:
        loop, name = new_loop()
        caller = asyncio.create_task(loop.call(blocks()))
        await is_running()
        await asyncio.wait_for(loop.close(timeout=0.2), PATIENCE)
        # close did not wait for the target: it still blocks its loop.
        assert not release.is_set() and thread_named(name) is not None
        with pytest.raises(SystemLoopClosed, match="did not finish"):
            await asyncio.wait_for(caller, PATIENCE)
        release.set()  # once the target lets go, the loop finishes itself
        assert await asyncio.to_thread(ended, name)

    asyncio.run(main())
    assert reported() == []


def test_a_blocked_loop_is_detected_and_stopped(reported):
    running, is_running = started()
    release = threading.Event()

    async def blocks() -> None:
        running.set_result(None)
        release.wait()

    async def main() -> None:
        loop, name = new_loop()
        caller = asyncio.create_task(loop.call(blocks()))
        await is_running()
        assert await loop.blocked(within=0.05)
        caller.cancel()  # what a cell's timeout does
        with pytest.raises(asyncio.CancelledError):
            await caller
        release.set()
        assert await asyncio.to_thread(ended, name)
        idle, idle_name = new_loop()
        assert not await idle.blocked(within=PATIENCE)
        await idle.close()
        assert ended(idle_name)

    asyncio.run(main())
    assert reported() == []
