"""Cell deadlines on one timer cut a block as asyncio.timeout does."""

from __future__ import annotations

import asyncio

import pytest

from evalh_pipeline.runner.deadlines import Deadlines


async def _forever() -> None:
    await asyncio.Event().wait()


def test_a_block_that_outlives_its_deadline_raises_timeout_and_its_task_goes_on():
    async def main() -> bool:
        deadlines = Deadlines()
        with pytest.raises(TimeoutError):
            with deadlines.after(0.01):
                await _forever()
        task = asyncio.current_task()
        assert task is not None and task.cancelling() == 0  # the cut was taken back: the task is not cancelled
        await asyncio.sleep(0)
        return True

    assert asyncio.run(main())


def test_a_block_that_ends_in_time_is_not_cut_and_the_timer_goes_with_the_stage():
    async def main() -> None:
        deadlines = Deadlines()
        with deadlines.after(3600) as deadline:
            await asyncio.sleep(0)
        assert not deadline.expired
        deadlines.close()
        assert deadlines._timer is None

    asyncio.run(main())


def test_each_block_is_cut_at_its_own_deadline_even_one_started_later_with_a_shorter_one():
    async def main() -> list[str]:
        deadlines = Deadlines()
        cut: list[str] = []
        release = asyncio.Event()

        async def cell(name: str, seconds: float, wait: asyncio.Event | None) -> None:
            try:
                with deadlines.after(seconds):
                    await (wait.wait() if wait is not None else _forever())
            except TimeoutError:
                cut.append(name)

        slow = asyncio.create_task(cell("long", 3600, release))
        await asyncio.sleep(0)  # the long deadline is set first
        await cell("short", 0.01, None)  # cut although the timer was first set for an hour
        release.set()
        await slow
        deadlines.close()
        return cut

    assert asyncio.run(main()) == ["short"]


def test_a_task_cancelled_from_outside_is_cancelled_not_timed_out():
    async def main() -> None:
        deadlines = Deadlines()
        entered = asyncio.Event()

        async def cell() -> None:
            with deadlines.after(3600):
                entered.set()
                await _forever()

        task = asyncio.create_task(cell())
        await entered.wait()
        task.cancel()  # the run is stopped (Ctrl-C)
        with pytest.raises(asyncio.CancelledError):
            await task
        deadlines.close()

    asyncio.run(main())


def test_a_cancel_from_outside_at_the_deadline_stays_a_cancellation():
    async def main() -> None:
        deadlines = Deadlines()
        entered = asyncio.Event()

        async def cell() -> None:
            with deadlines.after(3600) as deadline:
                entered.set()
                try:
                    await _forever()
                finally:
                    assert deadline.expired

        task = asyncio.create_task(cell())
        await entered.wait()
        for deadline in list(deadlines._active):
            deadline.when = 0.0  # due now
        deadlines._fire(asyncio.get_running_loop())  # the deadline cuts the task...
        task.cancel()  # ...and the run is stopped in the same pass
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
