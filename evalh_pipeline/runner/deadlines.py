"""Cell timeouts: one timer for all the cells in flight, not one per cell.

``asyncio.timeout`` around each cell made a ``Timeout``, pushed a ``TimerHandle`` on the
loop's heap and cancelled it again when the cell ended (the loop then sweeps the cancelled
handles off its heap): ~45,000 instructions a cell, 6% of a cell of the no-latency stub
(benchmarks/README.md), for a timer that almost never fires. Here a cell only records its
deadline; one timer, set for the earliest deadline of the cells in flight, cuts every cell
whose deadline has passed when it fires, and is set again for the next earliest.

A cut is what ``asyncio.timeout`` does: the cell's task is cancelled at its deadline, and
on the way out of the ``with`` block that CancelledError becomes ``TimeoutError``, unless
the task was also cancelled by someone else (the run being stopped, Ctrl-C), which then
propagates as it is.
"""

from __future__ import annotations

import asyncio
import math
import time
from types import TracebackType

# As the event loop decides which timers are due (asyncio.base_events): a timer may run up
# to the clock's resolution before its time.
_RESOLUTION = time.get_clock_info("monotonic").resolution


class Deadlines:
    """The deadlines of the cells in flight on one event loop (a run's trace stage)."""

    def __init__(self) -> None:
        self._active: set[Deadline] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = math.inf

    def after(self, seconds: float | None) -> Deadline:
        """A context manager that cuts the current task's block after ``seconds`` (None: never)."""
        return Deadline(self, seconds)

    def close(self) -> None:
        """Drop the timer (the stage is over: no cell is left to cut)."""
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._timer_at = None, math.inf

    def _add(self, deadline: Deadline, loop: asyncio.AbstractEventLoop) -> None:
        self._active.add(deadline)
        if deadline.when < self._timer_at:  # rare: cells started later end later, as a rule
            self._set_timer(deadline.when, loop)

    def _set_timer(self, when: float, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = loop.call_at(when, self._fire, loop)
        self._timer_at = when

    def _fire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer, self._timer_at = None, math.inf
        now = loop.time() + _RESOLUTION
        due = [deadline for deadline in self._active if deadline.when <= now]
        for deadline in due:
            self._active.discard(deadline)
            deadline._expire()
        if self._active:
            self._set_timer(min(deadline.when for deadline in self._active), loop)


class Deadline:
    """One cell's deadline (:meth:`Deadlines.after`); a synchronous context manager used
    around an ``await`` in a task."""

    __slots__ = ("_deadlines", "_seconds", "when", "_task", "_cancelling", "_expired")

    def __init__(self, deadlines: Deadlines, seconds: float | None) -> None:
        self._deadlines = deadlines
        self._seconds = seconds
        self.when = math.inf
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        self._expired = False

    def __enter__(self) -> Deadline:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("a deadline is used inside a task")
        self._task = task
        self._cancelling = task.cancelling()
        if self._seconds is not None:
            loop = task.get_loop()
            self.when = loop.time() + self._seconds
            self._deadlines._add(self, loop)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._deadlines._active.discard(self)
        # As asyncio.timeout: only a cancellation that is ours alone becomes a TimeoutError.
        if self._expired and self._task is not None and self._task.uncancel() <= self._cancelling \
                and exc_type is asyncio.CancelledError:
            raise TimeoutError from exc

    def _expire(self) -> None:
        self._expired = True
        if self._task is not None:
            self._task.cancel()

    @property
    def expired(self) -> bool:
        """True once the deadline passed and the block was cancelled."""
        return self._expired
