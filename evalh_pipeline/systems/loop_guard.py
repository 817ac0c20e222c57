"""Async targets on the runner's own event loop, watched for steps that block it.

A target's coroutine can run on the runner's loop (nothing to hand over) or on a loop of
its own on a daemon thread (:mod:`evalh_pipeline.systems.system_loop`). The second costs
a hand-over each way and, mostly, two threads taking the interpreter lock from each other
at every cell: a fifth of the standard benchmark's wall time. But a target that blocks the
loop (``time.sleep`` or blocking I/O in an ``async def``) would stall every cell of the
run there, and its own timeout could not fire. So on the runner's loop each step of the
target's coroutine (from one ``await`` that suspends to the next) is timed:

- a step longer than :data:`BLOCKING_STEP` that spent most of it waiting (``time.sleep``,
  blocking I/O: the thread's CPU time is under half the step's) is a waiting step. The
  :data:`WAITING_STEPS`-th of a target, or one that waited :data:`LONG_WAIT` seconds or
  more, marks it as blocking: its later calls go to a loop of their own, and a warning names
  it once. One short waiting step is not enough: on a busy machine a step can wait that
  long for a CPU. A step that long on the CPU moves nothing: on another thread it would hold
  the interpreter lock just the same, and a target whose loop-bound objects (an async HTTP
  client's pool) were made on this loop keeps them working;
- a step still running when its cell's timeout is due is interrupted: a watchdog thread
  signals the main thread, whose handler raises :class:`LoopBlocked` inside that step
  (``time.sleep`` and blocking reads give way to a signal), and the cell times out.

Cells of other targets in flight while the loop was blocked wait with it and may time
out as well; the warning says which target blocked.

On this thread a Ctrl-C (or the SIGTERM the engine process takes as one) raises inside
whatever code runs at that moment, often the target's step, while a BaseException the
target raises itself is that cell's error. So while a guard is open the interrupt signals
are counted on their way to their handlers (:func:`interrupts_seen`), and the adapter
tells the two apart by whether one arrived during the call. Signal handlers run on the main
thread only, so this is used where the runner's loop runs on the main thread of a Linux
process; elsewhere every async target gets a loop of its own.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Coroutine, Generator
from typing import Any

from evalh_pipeline.systems.base import AdapterError

logger = logging.getLogger(__name__)

# asyncio's own threshold for a slow callback in debug mode.
BLOCKING_STEP = 0.1
WAITING_STEPS = 3
LONG_WAIT = 1.0
# How often the watchdog looks at the running step (and re-sends to a step that swallowed the signal).
_POLL = 0.05
_SIGNAL = getattr(signal, "SIGRTMIN", 0) + 5  # a real-time signal: nobody else's


class LoopBlocked(BaseException):
    """Raised inside a target's step that still blocks the loop when its cell's timeout is due.

    A BaseException, so the target's own ``except Exception`` lets it through."""


class _Step:
    """The target step running on the main thread now."""

    __slots__ = ("deadline", "interrupt")

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.interrupt = False  # set by the watchdog just before it signals


_current: _Step | None = None  # only the main thread sets it
_users = 0
_users_lock = threading.Lock()
_stop = threading.Event()
_watchdog: threading.Thread | None = None
_previous_handler: Any = None
_INTERRUPTS = (signal.SIGINT, signal.SIGTERM)
_chained: dict[int, Any] = {}  # interrupt signal -> the handler it had before the first guard opened
_interrupts = 0


def available() -> bool:
    """True where targets can run on the calling loop: Linux, on the main thread."""
    return (sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread()
            and hasattr(signal, "SIGRTMIN"))


def interrupts_seen() -> int:
    """How many interrupt signals (SIGINT, SIGTERM) arrived while a guard was open."""
    return _interrupts


def _on_interrupt(signum: int, frame: Any) -> None:
    global _interrupts
    _interrupts += 1
    previous = _chained.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
    elif signum == signal.SIGINT:
        signal.default_int_handler(signum, frame)
    else:  # the default action: end the process by that signal
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _on_signal(signum: int, frame: Any) -> None:
    step = _current
    if step is not None and step.interrupt:  # not a step that has ended since the watchdog looked
        step.interrupt = False
        raise LoopBlocked


def _watch(stop: threading.Event) -> None:
    main = threading.main_thread().ident
    while not stop.wait(_POLL):
        step = _current
        if step is not None and time.monotonic() >= step.deadline and main is not None:
            step.interrupt = True
            step.deadline += 1.0  # if the target swallows it, again in a second
            signal.pthread_kill(main, _SIGNAL)


class LoopGuard:
    """Runs one target's coroutines on the calling loop, stepping them under the watchdog.

    ``open``/``close`` bracket its use (the main thread's signal handler and the watchdog
    thread exist while any guard is open); :attr:`blocking` turns true once a step of the
    target blocked the loop, and the caller then sends its calls elsewhere.
    """

    def __init__(self, target: str) -> None:
        self.target = target
        self.blocking = False
        self._waiting_steps = 0
        self._open = False

    def open(self) -> None:
        """Install the signal handler and start the watchdog (main thread only)."""
        global _users, _previous_handler, _stop, _watchdog
        with _users_lock:
            if _users == 0:
                _previous_handler = signal.signal(_SIGNAL, _on_signal)
                for interrupt in _INTERRUPTS:
                    handler = signal.getsignal(interrupt)
                    if handler is not signal.SIG_IGN and handler is not None:
                        _chained[interrupt] = handler
                        signal.signal(interrupt, _on_interrupt)
                _stop = threading.Event()
                _watchdog = threading.Thread(target=_watch, args=(_stop,), daemon=True, name="evalh-loop-watchdog")
                _watchdog.start()
            _users += 1
        self._open = True

    def close(self) -> None:
        """Undo :meth:`open` (the last guard restores the handler and stops the watchdog)."""
        global _users
        if not self._open:
            return
        self._open = False
        with _users_lock:
            _users -= 1
            if _users == 0:
                _stop.set()
                if _watchdog is not None:
                    _watchdog.join()  # gone before the judging stage forks its workers
                signal.signal(_SIGNAL, _previous_handler if _previous_handler is not None else signal.SIG_DFL)
                for interrupt, handler in _chained.items():
                    # Unless a handler changed it meanwhile (to ignore a second Ctrl-C, say).
                    if signal.getsignal(interrupt) is _on_interrupt:
                        signal.signal(interrupt, handler)
                _chained.clear()

    def run(self, coroutine: Coroutine[Any, Any, Any], timeout: float) -> Any:
        """An awaitable of ``coroutine``'s value, its steps timed against ``timeout`` seconds."""
        return _Stepped(coroutine, self, time.monotonic() + timeout, timeout)

    def _waited(self, seconds: float) -> None:
        """A step of ``seconds`` spent mostly off the CPU."""
        self._waiting_steps += 1
        if self._waiting_steps >= WAITING_STEPS or seconds >= LONG_WAIT:
            self._stepped_for(seconds)

    def _stepped_for(self, seconds: float) -> None:
        if not self.blocking:
            self.blocking = True
            logger.warning("target %s blocked the event loop for %.1f s (a blocking call in an async def?); "
                           "its later calls run on a loop of their own, and calls in flight meanwhile "
                           "may have timed out", self.target, seconds)


class _Stepped:
    """Awaiting it drives the target's coroutine one step at a time, each step timed."""

    __slots__ = ("_coroutine", "_guard", "_deadline", "_timeout")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], guard: LoopGuard, deadline: float,
                 timeout: float) -> None:
        self._coroutine = coroutine
        self._guard = guard
        self._deadline = deadline
        self._timeout = timeout

    def __await__(self) -> Generator[Any, Any, Any]:
        global _current
        coroutine = self._coroutine
        value: Any = None
        error: BaseException | None = None
        while True:
            step = _Step(self._deadline)
            started, cpu_started = time.monotonic(), time.thread_time()
            try:
                try:
                    _current = step
                    yielded = coroutine.send(value) if error is None else coroutine.throw(error)
                finally:
                    _current = None  # from here on the signal handler raises nothing
                    self._timed(started, cpu_started)
            except StopIteration as done:
                return done.value
            except LoopBlocked:
                coroutine.close()
                raise AdapterError(f"no response within {self._timeout:g}s: target {self._guard.target} "
                                   "blocked the event loop", type="timeout") from None
            try:
                value, error = (yield yielded), None
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as exc:  # noqa: BLE001 - thrown in by the task (a cancel): the target's to handle
                value, error = None, exc

    def _timed(self, started: float, cpu_started: float) -> None:
        took = time.monotonic() - started
        if took > BLOCKING_STEP and time.thread_time() - cpu_started < took / 2:
            self._guard._waited(took)
