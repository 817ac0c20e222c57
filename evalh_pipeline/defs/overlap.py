"""`evalh run` without paying Dagster's start-up first: the engine starts calling the system at once.

Importing Dagster, opening the instance and building the definitions take seconds. The CLI
overlaps them with the run itself: the main thread snapshots the cases and runs the cells
(the engine, no Dagster), while a second thread imports Dagster and materializes the eval's
``<eval>__run`` job in process. That job's ``cases`` and ``traces`` steps join the work in
flight (they wait for it and report it) instead of starting it again; ``results``,
``summary``, ``drift`` and the checks then run as in any other run. It is still one Dagster
run per eval run, and the UI shows it like any other.

This module imports Dagster only inside the second thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh_pipeline.runner.evaluation import EvaluationStats, evaluate_traces
from evalh_pipeline.runner.stages import CasesInfo, prepare_cases, run_variants
from evalh_pipeline.runner.traces import TraceStats, produce_traces
from evalh_pipeline.store.run_dir import RunDirectory, run_directory

if TYPE_CHECKING:
    from evalh_pipeline.config import EvalSpec
    from evalh_pipeline.defs.launch import RunOutcome
    from evalh_pipeline.defs.run_options import RunOptions


class EngineInterrupted(RuntimeError):
    """The CLI's cell loop was interrupted (Ctrl-C): the Dagster run stops at its traces step."""


@dataclass
class Prestarted:
    """The engine's work for one run, started before Dagster is ready (None: a stage it does not do)."""

    run_id: str
    cases: Future[CasesInfo] | None = field(default_factory=Future)
    traces: Future[TraceStats] | None = field(default_factory=Future)
    results: Future[EvaluationStats] | None = None


def _engine(spec: EvalSpec, run_id: str, options: RunOptions, handle: Prestarted) -> None:
    try:
        info = prepare_cases(spec, run_id)
    except BaseException as exc:
        handle.cases.set_exception(exc)
        handle.traces.set_exception(exc if isinstance(exc, Exception) else EngineInterrupted("interrupted"))
        raise
    handle.cases.set_result(info)
    reuse = RunDirectory(Path(options.reuse_from)) if options.reuse_from else None
    try:
        stats = asyncio.run(produce_traces(spec, info.run_dir, run_variants(info.run_dir, spec),
                                           max_concurrency=options.max_concurrency, progress=options.progress,
                                           reuse_from=reuse))
    except BaseException as exc:
        handle.traces.set_exception(exc if isinstance(exc, Exception) else EngineInterrupted("interrupted"))
        raise
    handle.traces.set_result(stats)


def _judge(spec: EvalSpec, run_id: str, options: RunOptions, handle: Prestarted) -> None:
    assert handle.results is not None
    run_dir = run_directory(spec, run_id)
    try:
        stats = asyncio.run(evaluate_traces(spec, run_dir, run_variants(run_dir, spec),
                                            max_concurrency=options.max_concurrency, progress=options.progress,
                                            incremental=not options.rejudge_all))
    except BaseException as exc:
        handle.results.set_exception(exc if isinstance(exc, Exception) else EngineInterrupted("interrupted"))
        raise
    handle.results.set_result(stats)


def run_overlapped(spec: EvalSpec, run_id: str, options: RunOptions) -> RunOutcome:
    """``materialize_run`` for a new or resumed run, with Dagster's start-up overlapped (see above)."""
    handle = Prestarted(run_id=run_id)
    return _overlapped(handle, lambda: _engine(spec, run_id, options, handle),
                       lambda launch, instance: launch.materialize_run(spec, run_id, instance=instance, runtime=options,
                                                                      prestarted=handle))


def reevaluate_overlapped(spec: EvalSpec, run_id: str, options: RunOptions) -> RunOutcome:
    """``materialize_reevaluation`` with the judging started before Dagster is ready."""
    handle = Prestarted(run_id=run_id, cases=None, traces=None, results=Future())
    return _overlapped(handle, lambda: _judge(spec, run_id, options, handle),
                       lambda launch, instance: launch.materialize_reevaluation(
                           spec, run_id, instance=instance, runtime=options, prestarted=handle))


def _overlapped(handle: Prestarted, engine: Callable[[], None], materialize: Callable[[Any, Any], RunOutcome]) -> RunOutcome:
    """Run ``engine`` here while a second thread imports Dagster and calls ``materialize``."""
    result: dict[str, Any] = {}

    def dagster_side() -> None:
        try:
            from evalh_pipeline.defs import launch

            instance = launch.local_instance()
            # A bad dataset row stops everything before a Dagster run exists.
            if handle.cases is not None and handle.cases.exception() is not None:
                return
            result["outcome"] = materialize(launch, instance)
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            result["error"] = exc

    thread = threading.Thread(target=dagster_side, name="evalh-dagster", daemon=True)
    thread.start()
    try:
        engine()
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
