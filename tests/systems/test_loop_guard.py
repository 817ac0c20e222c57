"""Async python_function targets run on the runner's loop; one that blocks it is cut off and moved."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from evalh_pipeline.models import EvalCase, RunVariant
from evalh_pipeline.systems import loop_guard
from evalh_pipeline.systems.base import AdapterError, RaisedBySystem, SystemContext
from evalh_pipeline.systems.python_function import PythonFunctionSystem
from tests.systems.test_python_function import isolated_imports, module  # noqa: F401 - the fixture is autouse

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guard is Linux-only")


def _adapter(folder: Path, source: str, timeout: float = 120.0) -> PythonFunctionSystem:
    name = module(folder, source)
    variant = RunVariant(name="v1", adapter="python_function", config={"target": f"{name}:run"},
                         timeout_seconds=timeout)
    return PythonFunctionSystem(variant, SystemContext(eval_dir=folder))


async def _timed(system: PythonFunctionSystem, case_id: str, timeout: float) -> tuple[str, float]:
    """What the runner does: the call under the cell's timeout; the answer or the error type."""
    started = time.monotonic()
    try:
        async with asyncio.timeout(timeout):
            response = await system.run(EvalCase(id=case_id), None)
        return response.output.final_answer or "", time.monotonic() - started
    except AdapterError as exc:
        return f"error:{exc.type}", time.monotonic() - started
    except TimeoutError:
        return "error:runner-timeout", time.monotonic() - started


def _calls(system: PythonFunctionSystem, timeout: float, *case_ids: str) -> list[tuple[str, float]]:
    """Start ``system``, make the calls one after the other, close it."""
    async def go() -> list[tuple[str, float]]:
        await system.start()
        try:
            return [await _timed(system, case_id, timeout) for case_id in case_ids]
        finally:
            await system.close()

    return asyncio.run(go())


def test_a_well_behaved_async_target_runs_on_the_runners_own_loop(tmp_path):
    system = _adapter(tmp_path, """
        import asyncio, threading
        async def run(case, variant):
            await asyncio.sleep(0.01)
            return {"final_answer": f"{threading.current_thread().name} {id(asyncio.get_running_loop())}"}
    """)

    async def go():
        await system.start()
        try:
            answers = await asyncio.gather(*(_timed(system, f"c{i}", 5) for i in range(5)))
        finally:
            await system.close()
        return answers, id(asyncio.get_running_loop())

    answers, runner_loop = asyncio.run(go())
    assert {a for a, _ in answers} == {f"MainThread {runner_loop}"}


def test_a_target_that_blocks_the_loop_is_moved_to_a_loop_of_its_own_with_one_warning(tmp_path, caplog):
    system = _adapter(tmp_path, """
        import asyncio, threading, time
        async def run(case, variant):
            time.sleep(0.15)  # the bug: a blocking call in an async def
            await asyncio.sleep(0)
            return {"final_answer": threading.current_thread().name}
    """)

    with caplog.at_level(logging.WARNING, logger="evalh_pipeline.systems.loop_guard"):
        answers = _calls(system, 5, "c0", "c1", "c2", "c3", "c4")
    # One waiting step could be a busy machine; the third is the target's doing.
    assert [a for a, _ in answers] == ["MainThread"] * 3 + ["evalh-v1-loop"] * 2
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "blocked the event loop for 0." in warnings[0]


def test_a_step_that_blocks_past_its_cells_timeout_is_interrupted_and_the_cell_times_out(tmp_path):
    system = _adapter(tmp_path, """
        import asyncio, time
        async def run(case, variant):
            if case["id"] == "stuck":
                time.sleep(3600)
            await asyncio.sleep(0)
            return {"final_answer": "ok"}
    """, timeout=0.5)

    (stuck, took), (after, _) = _calls(system, 0.5, "stuck", "after")
    assert stuck == "error:timeout"
    assert 0.5 <= took < 2.0
    assert after == "ok"


def test_a_target_that_swallows_the_interrupt_is_interrupted_again(tmp_path):
    system = _adapter(tmp_path, """
        import asyncio, time
        async def run(case, variant):
            for _ in range(3):
                try:
                    time.sleep(3600)
                except BaseException:
                    pass
            return {"final_answer": "never"}
    """, timeout=0.3)

    ((answer, took),) = _calls(system, 0.3, "stuck")
    # Three sleeps swallow three interrupts; the target then returns by itself.
    assert (answer, took < 6) == ("never", True)


def test_a_cancelled_call_is_cancelled_inside_the_target(tmp_path):
    system = _adapter(tmp_path, """
        import asyncio
        CLEANED = []
        async def run(case, variant):
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                CLEANED.append(case["id"])
                raise
    """)

    ((answer, _),) = _calls(system, 0.2, "c1")
    assert answer == "error:runner-timeout"
    name = system.config.target.split(":")[0]
    assert sys.modules[name].CLEANED == ["c1"]


def test_closing_the_last_guard_restores_the_signal_handler_and_ends_the_watchdog(tmp_path):
    before = signal.getsignal(loop_guard._SIGNAL)
    system = _adapter(tmp_path, """
        async def run(case, variant):
            return {"final_answer": "ok"}
    """)

    async def go():
        await system.start()
        during = signal.getsignal(loop_guard._SIGNAL), [t.name for t in threading.enumerate()]
        await system.close()
        return during

    (handler, threads) = asyncio.run(go())
    assert handler is loop_guard._on_signal and "evalh-loop-watchdog" in threads
    assert signal.getsignal(loop_guard._SIGNAL) == before
    assert "evalh-loop-watchdog" not in [t.name for t in threading.enumerate()]


def test_off_the_main_thread_async_targets_get_a_loop_of_their_own(tmp_path):
    system = _adapter(tmp_path, """
        import asyncio, threading
        async def run(case, variant):
            return {"final_answer": threading.current_thread().name}
    """)

    found: list[list[tuple[str, float]]] = []
    worker = threading.Thread(target=lambda: found.append(_calls(system, 5, "c1")))
    worker.start()
    worker.join()
    assert found[0][0][0] == "evalh-v1-loop"


def test_a_target_whose_long_steps_are_cpu_work_stays_on_the_runners_loop(tmp_path):
    system = _adapter(tmp_path, """
        import asyncio, threading, time
        async def run(case, variant):
            until = time.thread_time() + 0.15
            while time.thread_time() < until:  # on another thread it would hold the lock just the same
                pass
            await asyncio.sleep(0)
            return {"final_answer": threading.current_thread().name}
    """)

    assert [a for a, _ in _calls(system, 5, "c0", "c1")] == ["MainThread", "MainThread"]


def test_an_interrupt_signal_during_a_step_stops_the_run_but_a_raised_one_is_the_cells(tmp_path):
    system = _adapter(tmp_path, """
        import asyncio, signal
        async def run(case, variant):
            await asyncio.sleep(0)
            if case["id"] == "raises":
                raise KeyboardInterrupt  # the system's own: that cell's error
            signal.raise_signal(signal.SIGINT)  # the user's Ctrl-C, arriving inside the step
            return {"final_answer": "not reached"}
    """)

    def interrupt(signum, frame):  # as the engine process's handler: raise where the thread is
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        with pytest.raises(RaisedBySystem):
            asyncio.run(_one(system, "raises"))
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(_one(system, "ctrl-c"))
        assert signal.getsignal(signal.SIGINT) is interrupt  # the guard's wrapper is gone again
    finally:
        signal.signal(signal.SIGINT, previous)


async def _one(system: PythonFunctionSystem, case_id: str) -> None:
    await system.start()
    try:
        await system.run(EvalCase(id=case_id), None)
    finally:
        await system.close()
