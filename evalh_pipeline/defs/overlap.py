"""`evalh run` without paying Dagster's start-up first: the engine starts calling the system at once.

Importing Dagster, opening the instance and building the definitions take seconds, and
Dagster's bookkeeping (an event per step, written to its storage) goes on for the whole
run. The CLI overlaps them with the run itself. On Linux the engine gets a process of its
own, forked before anything else starts: it snapshots the cases and runs the cells (no
Dagster), while this process imports Dagster and materializes the eval's ``<eval>__run``
job. In one process, two threads would share one interpreter lock, and the cell loop
would wait for Dagster's work as it waits for the system (1.6x the physical limit on the
standard benchmark, against 1.1x apart; benchmarks/dagster_bench.py). Where forking is
not safe (another thread already runs, or not Linux) the engine runs on this thread and
Dagster on a second one.

The job's ``cases`` and ``traces`` steps join the work in flight (they wait for it and
report it) instead of starting it again; ``results``, ``summary``, ``drift`` and the checks
then run as in any other run. It is still one Dagster run per eval run, and the UI shows it
like any other. The engine process reports progress and its stages' outcomes over a pipe;
this process draws the progress.

This module imports Dagster only once the engine is started.
"""

from __future__ import annotations

import asyncio
import logging
import os
import pickle
import signal
import struct
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh_pipeline.defs.prestarted import STAGES as _STAGES
from evalh_pipeline.defs.prestarted import EngineInterrupted, Prestarted, fork_is_safe, require_dagster_home
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.progress import Progress
from evalh_pipeline.runner.stages import prepare_cases, run_variants, write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.locking import continue_in_forked_child, held_locks
from evalh_pipeline.store.run_dir import RunDirectory, run_directory

if TYPE_CHECKING:
    from evalh_pipeline.config import EvalSpec
    from evalh_pipeline.defs.run_options import RunOptions, RunOutcome


def _settle(handle: Prestarted, stage: str, work: Callable[[], Any]) -> Any:
    """``work()``'s value or exception into ``stage``'s future; a failure also settles every
    later stage's, so no step waits for work that will not come."""
    try:
        value = work()
    except BaseException as exc:
        failure = exc if isinstance(exc, Exception) else EngineInterrupted("interrupted")
        for later in _STAGES[_STAGES.index(stage):]:
            future = getattr(handle, later)
            if future is not None and not future.done():
                future.set_exception(failure)
        raise
    getattr(handle, stage).set_result(value)
    return value


def _engine(spec: EvalSpec, run_id: str, options: RunOptions, handle: Prestarted) -> None:
    info = _settle(handle, "cases", lambda: prepare_cases(spec, run_id))
    reuse = RunDirectory(Path(options.reuse_from)) if options.reuse_from else None
    _settle(handle, "traces", lambda: asyncio.run(produce_traces(
        spec, info.run_dir, run_variants(info.run_dir, spec), max_concurrency=options.max_concurrency,
        progress=options.progress, reuse_from=reuse)))
    _judge(spec, run_id, options, handle)


def _judge(spec: EvalSpec, run_id: str, options: RunOptions, handle: Prestarted) -> None:
    """Judge (a fresh run's results, staged as it ran, are only adopted), then summarize."""
    run_dir = run_directory(spec, run_id)
    _settle(handle, "results", lambda: asyncio.run(evaluate_traces(
        spec, run_dir, run_variants(run_dir, spec), max_concurrency=options.max_concurrency,
        progress=options.progress, incremental=not options.rejudge_all)))
    _settle(handle, "summary", lambda: write_summary(spec, run_dir))


def run_overlapped(spec: EvalSpec, run_id: str, options: RunOptions) -> RunOutcome:
    """``materialize_run`` for a new or resumed run, with Dagster's start-up overlapped (see above)."""
    handle = Prestarted(run_id=run_id, results=Future(), summary=Future())
    return _overlapped(handle, options, lambda progress: _engine(spec, run_id, _with(options, progress), handle),
                       lambda launch, instance: launch.materialize_run(spec, run_id, instance=instance, runtime=options,
                                                                      prestarted=handle))


def reevaluate_overlapped(spec: EvalSpec, run_id: str, options: RunOptions) -> RunOutcome:
    """``materialize_reevaluation`` with the judging started before Dagster is ready."""
    handle = Prestarted(run_id=run_id, cases=None, traces=None, results=Future(), summary=Future())
    return _overlapped(handle, options, lambda progress: _judge(spec, run_id, _with(options, progress), handle),
                       lambda launch, instance: launch.materialize_reevaluation(
                           spec, run_id, instance=instance, runtime=options, prestarted=handle))


def _with(options: RunOptions, progress: Progress) -> RunOptions:
    return replace(options, progress=progress)


def _overlapped(handle: Prestarted, options: RunOptions, engine: Callable[[Progress], None],
                materialize: Callable[[Any, Any], RunOutcome]) -> RunOutcome:
    require_dagster_home()
    if fork_is_safe():
        return _forked(handle, options.progress, engine, materialize)
    return _threaded(handle, options.progress, engine, materialize)


def _dagster_side(handle: Prestarted, materialize: Callable[[Any, Any], RunOutcome]) -> RunOutcome | None:
    from evalh_pipeline.defs import launch

    instance = launch.local_instance()
    # A bad dataset row stops everything before a Dagster run exists.
    if handle.cases is not None and handle.cases.exception() is not None:
        return None
    return materialize(launch, instance)


def _threaded(handle: Prestarted, progress: Progress, engine: Callable[[Progress], None],
              materialize: Callable[[Any, Any], RunOutcome]) -> RunOutcome:
    """Run ``engine`` here while a second thread imports Dagster and calls ``materialize``."""
    result: dict[str, Any] = {}

    def dagster_side() -> None:
        try:
            result["outcome"] = _dagster_side(handle, materialize)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            result["error"] = exc

    thread = threading.Thread(target=dagster_side, name="evalh-dagster", daemon=True)
    thread.start()
    try:
        engine(progress)
    except (KeyboardInterrupt, asyncio.CancelledError):
        thread.join(timeout=30)
        raise KeyboardInterrupt from None
    except BaseException:
        thread.join(timeout=30)
        raise
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["outcome"]


def _forked(handle: Prestarted, progress: Progress, engine: Callable[[Progress], None],
            materialize: Callable[[Any, Any], RunOutcome]) -> RunOutcome:
    """Run ``engine`` in a forked process while this one imports Dagster and calls ``materialize``."""
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # or the child would print what is buffered a second time
    read_end, write_end = os.pipe()
    held = held_locks()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the engine process: never returns into the caller's code
        try:
            os.close(read_end)
            _engine_process(handle, engine, write_end, held, parent)
        finally:
            os._exit(1)
    os.close(write_end)
    child = _EngineProcess(pid, read_end, handle, progress)
    try:
        outcome = _dagster_side(handle, materialize)
    except BaseException:
        child.stop()
        # A Ctrl-C that reached only the engine process (Dagster holds this process's SIGINT
        # while it executes a step) fails the run's steps: it is still the user's interrupt.
        if child.interrupted():
            raise KeyboardInterrupt from None
        raise
    # The job returned, so every stage it waited for is over; the exit is a formality.
    code = child.wait()
    if child.interrupted():
        raise KeyboardInterrupt
    if outcome is None:  # the cases failed before a Dagster run existed
        assert handle.cases is not None
        exc = handle.cases.exception()
        if isinstance(exc, EngineInterrupted):
            raise KeyboardInterrupt
        raise exc if exc is not None else RuntimeError(f"the engine process exited with code {code}")
    return outcome


# -- the engine process ---------------------------------------------------------------------

_HEADER = struct.Struct("!I")
# Exit codes of an engine process that was interrupted (its own 130, or killed by the signal).
_INTERRUPTED = (130, -signal.SIGINT, -signal.SIGTERM)


_sending = threading.Lock()  # a message is two writes: no other thread's may come between


def _send(fd: int, message: tuple[Any, ...]) -> None:
    data = pickle.dumps(message)
    with _sending:
        os.write(fd, _HEADER.pack(len(data)))
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]


class _RelayedLog(logging.Handler):
    """The engine process's warnings go to the CLI's process, which prints them as its own: a
    line written to the terminal from here would cut through the progress bars drawn there."""

    def __init__(self, fd: int) -> None:
        super().__init__(logging.WARNING)
        self._fd = fd

    def emit(self, record: logging.LogRecord) -> None:
        try:
            _send(self._fd, ("log", record.name, record.levelno, record.getMessage()))
        except Exception:  # noqa: BLE001 - logging never fails the caller
            self.handleError(record)


def _outcome(future: Future[Any]) -> tuple[str, Any]:
    exc = future.exception()
    if exc is None:
        return "result", future.result()
    try:
        pickle.loads(pickle.dumps(exc))
        return "error", exc
    except Exception:  # noqa: BLE001 - an exception that cannot cross: send its text
        return "error", RuntimeError(f"{type(exc).__name__}: {exc}")


class _RelayedProgress:
    """The engine process's Progress: counts go to the CLI's process, at most every 50 ms."""

    INTERVAL = 0.05

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending: dict[str, int] = {}
        self._sent_at = 0.0

    def start(self, phase: str, total: int | None) -> None:
        _send(self._fd, ("progress", "start", phase, total))

    def advance(self, phase: str, n: int = 1) -> None:
        self._pending[phase] = self._pending.get(phase, 0) + n
        now = time.monotonic()
        if now - self._sent_at >= self.INTERVAL:
            self.flush()
            self._sent_at = now

    def finish(self, phase: str) -> None:
        self.flush()
        _send(self._fd, ("progress", "finish", phase, None))

    def flush(self) -> None:
        for phase, n in self._pending.items():
            if n:
                _send(self._fd, ("progress", "advance", phase, n))
        self._pending.clear()


def _stop_with_parent(parent: int) -> None:
    """Have the kernel send SIGTERM to this process when its parent dies (``kill -9``, a CI
    timeout): the cells stop as on Ctrl-C, rather than run on with nobody to record them."""
    import ctypes

    pr_set_pdeathsig = 1
    try:
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM))
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _interrupt_once() -> None:
    """SIGTERM (from the parent, or the kernel when the parent died) stops the engine as
    Ctrl-C does; the first of the two signals interrupts, a later one is ignored, so a
    terminal's ^C followed by the parent's SIGTERM does not cut into the clean-up.

    SIGINT is only taken over where it is not ignored: a command started in the background
    of a script (SIGINT ignored) stays deaf to the terminal's ^C, as its shell wants.
    """
    def stop(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, stop)


def _engine_process(handle: Prestarted, engine: Callable[[Progress], None], fd: int, held: frozenset[str],
                    parent: int) -> None:
    """The forked child: run ``engine``, sending each stage's outcome as its future completes."""
    code = 0
    try:
        _interrupt_once()
        _stop_with_parent(parent)
        continue_in_forked_child(held)
        logging.getLogger("evalh_pipeline").addHandler(_RelayedLog(fd))
        for stage in _STAGES:
            future = getattr(handle, stage)
            if future is not None:
                future.add_done_callback(lambda f, stage=stage: _send(fd, ("stage", stage, *_outcome(f))))
        engine(_RelayedProgress(fd))
    except KeyboardInterrupt:
        code = 130
    except BaseException:  # noqa: BLE001 - already sent through the stage's future
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)  # never the parent's atexit handlers, finalizers or Dagster's cleanup


class _EngineProcess:
    """The CLI's side of the engine process: relays its progress and stage outcomes."""

    def __init__(self, pid: int, fd: int, handle: Prestarted, progress: Progress) -> None:
        self.pid = pid
        self._fd = fd
        self._handle = handle
        self._progress = progress
        self._code: int | None = None
        self._reaping = threading.Lock()  # the relay and the caller both wait for the exit
        self._reader = threading.Thread(target=self._relay, name="evalh-engine-relay", daemon=True)
        self._reader.start()

    def _relay(self) -> None:
        with os.fdopen(self._fd, "rb") as pipe:
            while header := pipe.read(_HEADER.size):
                message = pickle.loads(pipe.read(_HEADER.unpack(header)[0]))
                if message[0] == "log":
                    _, name, level, text = message
                    logging.getLogger(name).log(level, "%s", text)
                elif message[0] == "progress":
                    _, what, phase, value = message
                    if what == "start":
                        self._progress.start(phase, value)
                    elif what == "advance":
                        self._progress.advance(phase, value)
                    else:
                        self._progress.finish(phase)
                else:
                    _, stage, kind, value = message
                    future = getattr(self._handle, stage)
                    if kind == "result":
                        future.set_result(value)
                    else:
                        future.set_exception(value)
        # The pipe closed: the process is gone. A stage it never reported is lost with it.
        code = self.wait()
        for stage in _STAGES:
            future = getattr(self._handle, stage)
            if future is not None and not future.done():
                future.set_exception(EngineInterrupted("interrupted") if code in _INTERRUPTED else
                                     RuntimeError(f"the engine process ended (exit code {code}) before its {stage} "
                                                  "stage finished: did the system under test end its process?"))

    def interrupted(self) -> bool:
        """True once the engine process has ended on an interrupt (Ctrl-C, SIGTERM)."""
        return self._code is not None and self._code in _INTERRUPTED

    def wait(self) -> int:
        """The engine process's exit code (negative: killed by that signal)."""
        with self._reaping:
            if self._code is None:
                _, status = os.waitpid(self.pid, 0)
                self._code = os.waitstatus_to_exitcode(status)
            return self._code

    def stop(self) -> None:
        """Interrupt the engine process (if a terminal's Ctrl-C did not reach it) and reap it."""
        # A Ctrl-C on the terminal reached the engine process too: give it a moment to stop on
        # its own, so that a second interrupt does not cut into its clean-up.
        self._reader.join(timeout=1)
        if self._reader.is_alive():
            try:
                os.kill(self.pid, signal.SIGTERM)  # handled as an interrupt there (_interrupt_once)
            except ProcessLookupError:
                pass
        self._reader.join(timeout=30)
        if self._reader.is_alive():
            os.kill(self.pid, signal.SIGKILL)
            self._reader.join()
