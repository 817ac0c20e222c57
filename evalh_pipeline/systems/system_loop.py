"""An event loop on a daemon thread for the async targets of ``python_function``.

The target's coroutines run there, not on the runner's loop, so a target that blocks its
loop (``time.sleep`` in an ``async def``) stalls only its own calls, which the runner
still times out (systems/python_function.py).

Calls cross between the two loops in batches: a crossing wakes the other loop with a
write to its self-pipe, and the waking thread then waits for the interpreter lock the
woken one took. So the calls (and the replies) of one pass of a loop go over together,
with one wake-up, instead of two wake-ups per call; with 64 calls in flight that was most
of the hand-over cost per cell (benchmarks/dagster_bench.py).

Lifecycle: :meth:`SystemLoop.stop` retires a loop (no new calls; the calls in flight run to
their end, then the loop finishes itself); :meth:`SystemLoop.close` also cancels the calls
in flight and waits, bounded, for the loop's thread to end. Finishing cancels the tasks
left (the target's own background tasks too), closes async generators and the default
executor, then closes the loop, so no coroutine or task is left for the garbage collector
to warn about ("never awaited", "Task was destroyed but it is pending").
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine
from typing import Any

from evalh_pipeline.systems.base import AdapterError, RaisedBySystem


class SystemLoopClosed(AdapterError):
    """The system loop a call was for is closed: the adapter closed (the run ends), or the
    loop was retired because its target blocked it. The call did not run, or was cancelled."""


class _Call:
    """One call crossing to the system loop and its reply crossing back."""

    __slots__ = ("coroutine", "reply", "caller", "task", "abandoned", "error")

    def __init__(self, coroutine: Coroutine[Any, Any, Any], reply: asyncio.Future[Any],
                 caller: asyncio.AbstractEventLoop) -> None:
        self.coroutine = coroutine
        self.reply = reply
        self.caller = caller
        self.task: asyncio.Task[Any] | None = None
        self.abandoned = False  # the caller stopped waiting (its cell timed out or the run stops)
        self.error: SystemLoopClosed | None = None  # why closing the loop refused or cancelled it


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
        asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        """Wake the receiving loop for the items posted; callable from any thread."""
        with self._lock:
            self._flush_scheduled = False
            if self._woken or not self._items:
                return
            self._woken = True
        _soon(self.loop, self._drain)

    def _drain(self) -> None:
        for item in self.take():
            self._deliver(item)

    def take(self) -> list[Any]:
        """Remove and return the items not delivered yet."""
        with self._lock:
            items, self._items, self._woken = self._items, [], False
        return items


class SystemLoop:
    """An event loop on a daemon thread for the async target's calls."""

    # close() waits this long for the calls it cancelled to end; see close().
    CLOSE_SECONDS = 5.0

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._inbox = _Mailbox(self._loop, self._start)
        self._outboxes: dict[asyncio.AbstractEventLoop, _Mailbox] = {}
        self._outboxes_lock = threading.Lock()
        # Set once, by stop(); under the lock, so no call is posted after it is set.
        self._stopped = False
        self._lock = threading.Lock()
        self._waiting: set[_Call] = set()  # calls whose callers wait for a reply (under the lock)
        # Only on the loop's thread: the calls started and not over yet, and the stage.
        self._live: set[_Call] = set()
        self._draining = False  # stop() asked: stop the loop once _live is empty
        self._finishing = False  # after run_forever: tasks are being cancelled, the loop closed
        self._finished: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._serve, daemon=True, name=name)
        self._thread.start()

    async def call(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Await ``coroutine`` on this loop; cancelling the caller cancels it there.

        Raises :class:`SystemLoopClosed` when the loop is stopped, before or during the call.
        """
        caller = asyncio.get_running_loop()
        call = _Call(coroutine, caller.create_future(), caller)
        with self._lock:
            if self._stopped:
                coroutine.close()  # it never runs: closed, it is not reported "never awaited"
                raise SystemLoopClosed("the system's event loop is closed; the call was not made")
            self._inbox.post(call)
            self._waiting.add(call)
        try:
            return await call.reply
        except asyncio.CancelledError:
            # The caller gave up (a timeout, the run stopping), or the target cancelled itself:
            # either way nothing more of this call may run there.
            _soon(self._loop, self._abandon, call)
            raise
        finally:
            with self._lock:
                self._waiting.discard(call)

    async def blocked(self, within: float = 0.5) -> bool:
        """True when the loop does not run a callback within ``within`` seconds (it is then
        stopped: it finishes itself if it ever unblocks). False for a loop already stopped."""
        if self._stopped:
            return False
        # A plain callback, not a coroutine: one dropped unrun (the loop closed meanwhile)
        # leaves nothing behind to be reported "never awaited".
        ran: concurrent.futures.Future[None] = concurrent.futures.Future()
        _soon(self._loop, _answer, ran)
        try:
            await asyncio.wait_for(asyncio.wrap_future(ran), within)
            return False
        except TimeoutError:
            ran.cancel()
            self.stop()
            return True

    def stop(self) -> None:
        """Take no more calls; once the calls in flight are over, the loop finishes itself.

        The callers of those calls still wait for them (each bounded by its cell's timeout):
        a loop retired because one target blocked it lets the others end as they would have.
        """
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        _soon(self._loop, self._stop_when_idle)

    async def close(self, timeout: float = CLOSE_SECONDS) -> None:
        """Stop, cancel the calls in flight, and wait up to ``timeout`` seconds for the loop
        to finish and its thread to end.

        A target that blocks its loop, or ignores cancellation, keeps the loop from finishing:
        then this returns after ``timeout`` and the loop is left to its daemon thread, which
        finishes it if the target ever lets go and otherwise ends with the process (it never
        keeps the process alive). The callers still waiting get :class:`SystemLoopClosed`
        then, rather than waiting for a loop that may never answer.
        """
        self.stop()
        _soon(self._loop, self._cancel_live)
        # asyncio.wait, not wait_for: a timeout must not cancel the future the thread sets.
        finished = asyncio.wrap_future(self._finished)
        done, _ = await asyncio.wait([finished], timeout=timeout)
        if done:
            self._thread.join()  # setting _finished was the thread's last act
            return
        with self._lock:
            waiting = list(self._waiting)
        for call in waiting:
            call.error = SystemLoopClosed(
                f"the system's event loop did not finish within {timeout:g}s of closing (its target blocks it)")
            _soon(call.caller, _reply, call)  # outside the mailboxes

    # -- on the system loop's thread ------------------------------------------------------

    def _serve(self) -> None:
        try:
            self._loop.run_forever()
        finally:
            try:
                self._finish()
            finally:
                self._finished.set_result(None)

    def _start(self, call: _Call) -> None:
        if call.abandoned:
            call.coroutine.close()
            return
        call.task = self._loop.create_task(self._wrapped(call.coroutine))
        self._live.add(call)
        call.task.add_done_callback(lambda _, call=call: self._done(call))

    def _done(self, call: _Call) -> None:
        # A task cancelled before its first step never awaited the target's coroutine:
        # closing it (a no-op when it ran) spares a "never awaited" warning.
        call.coroutine.close()
        self._live.discard(call)
        self._outbox(call.caller).post(call)
        if self._draining and not self._live and not self._finishing:
            self._loop.stop()

    def _abandon(self, call: _Call) -> None:
        call.abandoned = True
        if call.task is not None:
            call.task.cancel()

    def _stop_when_idle(self) -> None:
        self._draining = True
        if not self._live:
            self._loop.stop()

    def _cancel_live(self) -> None:
        for call in self._live:
            call.error = SystemLoopClosed("the system's event loop was closed during this call")
            assert call.task is not None  # noqa: S101 - _live holds started calls only
            call.task.cancel()

    def _finish(self) -> None:
        """After run_forever: refuse what was never started, cancel what is left, close the loop."""
        loop = self._loop
        self._finishing = True
        with self._lock:
            self._stopped = True  # normally set already (stop()); no call can be posted after this
            unstarted = self._inbox.take()
        self._cancel_live()
        tasks = asyncio.all_tasks(loop)  # the calls left, and tasks the target started itself
        for task in tasks:
            task.cancel()
        # Each run_until_complete returns once its work is done; a task that ignores its
        # cancellation keeps this thread here (close() stops waiting after its bound).
        if tasks:
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
        for call in unstarted:
            call.coroutine.close()
            if not call.abandoned:
                call.error = SystemLoopClosed("the system's event loop closed before this call started")
                _soon(call.caller, _reply, call)  # outside the mailboxes
        # Replies posted during the last pass of the loop have not gone over yet.
        with self._outboxes_lock:
            outboxes = list(self._outboxes.values())
        for box in outboxes:
            box.flush()
        loop.close()

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


def _answer(ran: concurrent.futures.Future[None]) -> None:
    """On the system loop: answer :meth:`SystemLoop.blocked`'s probe, unless it gave up."""
    if ran.set_running_or_notify_cancel():
        ran.set_result(None)


def _reply(call: _Call) -> None:
    """On the caller's loop: hand the call's outcome to the waiting caller."""
    task = call.task
    if call.reply.done():
        return  # the caller stopped waiting
    if task is not None and task.done() and not task.cancelled():
        if (exc := task.exception()) is not None:
            call.reply.set_exception(exc)
        else:
            call.reply.set_result(task.result())
    elif call.error is not None:
        call.reply.set_exception(call.error)  # closing the loop refused, cancelled or gave up on it
    else:
        call.reply.cancel()  # the target raised CancelledError itself: the runner tells the two apart


def _soon(loop: asyncio.AbstractEventLoop, callback: Any, *args: Any) -> None:
    """From any thread: run ``callback`` on ``loop``; nothing when that loop is closed (nobody
    waits there any more)."""
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:
        pass
