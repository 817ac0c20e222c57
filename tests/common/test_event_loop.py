"""A Ctrl-C always stops a coroutine run by run_coroutine, even where the host's SIGINT
handler raises its own error (as Dagster's does while a step runs) and the loop is busy in
callbacks, where asyncio would swallow what a handler raised."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import pytest

from evalh_pipeline.common.event_loop import run_coroutine


class HostInterrupt(BaseException):
    """What a host's handler raises (Dagster: DagsterExecutionInterruptedError)."""


def _host_handler(signo, frame):
    raise HostInterrupt()


async def _busy_in_callbacks(cleaned: list[str]) -> None:
    loop = asyncio.get_running_loop()

    def busy() -> None:  # the main thread spends its time inside loop callbacks
        until = time.thread_time() + 0.002
        while time.thread_time() < until:
            pass
        loop.call_later(0.0005, busy)

    for _ in range(4):
        loop.call_soon(busy)
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        cleaned.append("cancelled")  # the run's tasks are cancelled where they wait
        raise


def test_every_ctrl_c_stops_the_run_and_the_hosts_handler_is_put_back():
    host_before = signal.signal(signal.SIGINT, _host_handler)
    try:
        stopped = 0
        for _ in range(20):
            cleaned: list[str] = []
            timer = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                run_coroutine(_busy_in_callbacks(cleaned))
            timer.join()
            assert cleaned == ["cancelled"]
            assert signal.getsignal(signal.SIGINT) is _host_handler
            stopped += 1
        assert stopped == 20
    finally:
        signal.signal(signal.SIGINT, host_before)


def test_an_ignored_ctrl_c_stays_ignored_and_results_come_back():
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        async def answer() -> int:
            os.kill(os.getpid(), signal.SIGINT)
            await asyncio.sleep(0.05)
            return 42

        assert run_coroutine(answer()) == 42
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
