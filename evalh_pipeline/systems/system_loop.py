"""An event loop on a daemon thread for the async targets of ``python_function``.

The target's coroutines run there, not on the runner's loop, so a target that blocks its
loop (``time.sleep`` in an ``async def``) stalls only its own calls, which the runner
still times out (systems/python_function.py).

Calls cross between the two loops in batches: a crossing wakes the other loop with a
write to its self-pipe, and the waking thread then waits for the interpreter lock the
woken one took. So the calls (and the replies) of one pass of a loop go over together,
with one wake-up, instead of two wake-ups per call; with 64 calls in flight that was most
of the hand-over cost per cell (benchmarks/dagster_bench.py).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any

from evalh_pipeline.systems.base import RaisedBySystem


class _Call:
    """One call crossing to the system loop and its reply crossing back."""

    __slots__ = ("coroutine", "reply", "caller", "task", "abandoned")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], reply: asyncio.Future[Any],
                 caller: asyncio.AbstractEventLoop) -> None:
        self.coroutine = coroutine
        self.reply = reply
        self.caller = caller
        self.task: asyncio.Task[Any] | None = None
        self.abandoned = False  # the caller stopped waiting (its cell timed out or the run stops)


class _Mailbox:
    """Items for one loop, posted from another loop's thread.

    Posting only collects: the items posted during one pass of the sender's loop go over
    together, with one wake-up of the receiving loop, at the start of the sender's next pass.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, deliver: Any) -> None:
        self.loop = loop
        self._deliver = deliver
        self._items: list[Any] = []
        self._lock = threading.Lock()
        self._flush_scheduled = False
        self._woken = False

    def post(self, item: Any) -> None:
        """Add ``item``; call on a running loop (the sender's)."""
        with self._lock:
            self._items.append(item)
            if self._flush_scheduled:
                return
            self._flush_scheduled = True
        asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        with self._lock:
            self._flush_scheduled = False
            if self._woken or not self._items:
                return
            self._woken = True
        try:
            self.loop.call_soon_threadsafe(self._drain)
        except RuntimeError:
            pass  # that loop is closed: nobody is waiting there any more

    def _drain(self) -> None:
        with self._lock:
            items, self._items, self._woken = self._items, [], False
        for item in items:
            self._deliver(item)


class SystemLoop:
    """An event loop on a daemon thread for the async target's calls."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._inbox = _Mailbox(self._loop, self._start)
        self._outboxes: dict[asyncio.AbstractEventLoop, _Mailbox] = {}
        self._outboxes_lock = threading.Lock()
        threading.Thread(target=self._loop.run_forever, daemon=True, name=name).start()

    async def call(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Await ``coroutine`` on this loop; cancelling the caller cancels it there."""
        caller = asyncio.get_running_loop()
        call = _Call(coroutine, caller.create_future(), caller)
        self._inbox.post(call)
        try:
            return await call.reply
        except asyncio.CancelledError:
            # The caller gave up (a timeout, the run stopping), or the target cancelled itself:
            # either way nothing more of this call may run there.
            self._loop.call_soon_threadsafe(self._abandon, call)
            raise

    # -- on the system loop -------------------------------------------------------------

    def _start(self, call: _Call) -> None:
        if call.abandoned:
            call.coroutine.close()
            return
        call.task = self._loop.create_task(self._wrapped(call.coroutine))
        call.task.add_done_callback(lambda _, call=call: self._outbox(call.caller).post(call))

    def _abandon(self, call: _Call) -> None:
        call.abandoned = True
        if call.task is not None:
            call.task.cancel()

    def _outbox(self, caller: asyncio.AbstractEventLoop) -> _Mailbox:
        with self._outboxes_lock:
            box = self._outboxes.get(caller)
            if box is None:
                box = self._outboxes[caller] = _Mailbox(caller, _reply)
            return box

    @staticmethod
    async def _wrapped(coroutine: Coroutine[Any, Any, Any]) -> Any:
        try:
            return await coroutine
        except (Exception, asyncio.CancelledError):
            raise
        except BaseException as exc:  # noqa: BLE001 - a KeyboardInterrupt here would stop this loop
            raise RaisedBySystem(exc) from None

    async def blocked(self, within: float = 0.5) -> bool:
        """True when the loop does not run a callback within ``within`` seconds."""
        # A plain callback, not a coroutine: on a loop stopped meanwhile (the adapter closed
        # as the run ends) it is dropped unrun, and a dropped coroutine would be reported
        # "never awaited" when the loop is collected.
        ran: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._loop.call_soon_threadsafe(_answer, ran)
        try:
            await asyncio.wait_for(asyncio.wrap_future(ran), within)
            return False
        except TimeoutError:
            ran.cancel()
            self.stop()  # once it unblocks, if ever
            return True

    def stop(self) -> None:
        """Stop the loop once its pending callbacks ran (a blocked loop is left to the daemon thread)."""
        self._loop.call_soon_threadsafe(self._loop.stop)


def _answer(ran: concurrent.futures.Future[None]) -> None:
    """On the system loop: answer :meth:`SystemLoop.blocked`'s probe, unless it gave up."""
    if ran.set_running_or_notify_cancel():
        ran.set_result(None)


def _reply(call: _Call) -> None:
    """On the caller's loop: hand the finished task's outcome to the waiting caller."""
    task = call.task
    if call.reply.done() or task is None:
        return  # the caller stopped waiting
    if task.cancelled():
        call.reply.cancel()  # the target raised CancelledError itself: the runner tells the two apart
    elif (exc := task.exception()) is not None:
        call.reply.set_exception(exc)
    else:
        call.reply.set_result(task.result())
