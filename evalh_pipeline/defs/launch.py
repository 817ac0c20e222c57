"""Materialize an eval's assets against a Dagster instance: what `evalh run` does.

A run of an eval is one Dagster run of ``<eval>__run`` (cases, traces, results, summary
and drift for every variant, with every check), executed in this process against the
instance the UI reads, tagged ``evalh/run_id`` so every step works on the same run
directory. Re-evaluation is one run of ``<eval>__judge``; promotion one of ``<eval>__promote``.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import dagster as dg
from dagster._core.errors import DagsterAssetCheckFailedError  # not exported at the top level
from filelock import FileLock

from evalh_pipeline.config import ConfigError, EvalSpec
from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.evals.names import (
    REJUDGE_TAG,
    REUSE_FROM_TAG,
    RUN_ID_TAG,
    TRIGGER_TAG,
    judge_job,
    promote_job,
    run_job,
)
from evalh_pipeline.defs.prestarted import Prestarted
from evalh_pipeline.defs.resources import EvalhRuntime, Session
from evalh_pipeline.defs.run_options import InfrastructureError, RunOptions, RunOutcome
from evalh_pipeline.runner.stages import load_summary, prepare_cases
from evalh_pipeline.store.run_dir import run_directory

DEFAULT_HOME = ".dagster_home"
_INSTANCE_YAML = """\
# Written by evalh for a local, embedded Dagster instance. `dagster dev` with
# DAGSTER_HOME pointing here shows the runs `evalh` made.
telemetry:
  enabled: false
"""


def local_instance() -> dg.DagsterInstance:
    """``$DAGSTER_HOME`` if set, else ``./.dagster_home`` (created on first use).

    The environment is only read: the instance is opened from its folder, so nothing
    else in the process sees a DAGSTER_HOME it did not set.
    """
    home = os.environ.get("DAGSTER_HOME")
    path = Path(home) if home else Path(DEFAULT_HOME).resolve()
    if not home:
        path.mkdir(parents=True, exist_ok=True)
        config = path / "dagster.yaml"
        if not config.exists():
            config.write_text(_INSTANCE_YAML)
    with _opening(path):
        return dg.DagsterInstance.get() if home else dg.DagsterInstance.from_config(str(path))


@contextmanager
def _opening(home: Path) -> Iterator[None]:
    """One process at a time opens the instance: two `evalh` commands opening a new one at
    once would both create its SQLite tables, and one would fail ("table runs already
    exists"). A home where no lock file can be made (read-only, missing) is opened as is."""
    try:
        lock = FileLock(str(home / ".evalh-instance.lock"))
        lock.acquire(timeout=120)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        lock.release()


def materialize_run(
    spec: EvalSpec, run_id: str, *, instance: dg.DagsterInstance, runtime: RunOptions | None = None,
    snapshot_cases: bool = False, prestarted: Prestarted | None = None,
) -> RunOutcome:
    """Materialize cases, traces, results, summary and drift of ``run_id``: one Dagster run.

    For an existing run this resumes it: only cells without a trace are run.

    With ``snapshot_cases`` the run directory (header + cases.jsonl) is written from
    ``spec`` itself before Dagster runs (CLI selection: ``--limit``, ``--filter``). A bad
    dataset row raises ConfigError before anything is published.

    With ``prestarted`` (defs/overlap.py) the caller is already snapshotting the cases and
    running the cells: the cases and traces steps wait for that work and report it.
    """
    if snapshot_cases:
        prepare_cases(spec, run_id)
    return _materialize(spec, run_id, instance, runtime, run_job(spec.name), prestarted)


def materialize_reevaluation(
    spec: EvalSpec, run_id: str, *, instance: dg.DagsterInstance, runtime: RunOptions | None = None,
    prestarted: Prestarted | None = None, dagster_run_id: str | None = None,
) -> RunOutcome:
    """Rematerialize results (every variant), summary and drift of a run from its persisted traces.

    With ``prestarted`` the caller is already judging (or has judged): the steps join that
    work. ``dagster_run_id``: the id the Dagster run gets (default: a new one)."""
    return _materialize(spec, run_id, instance, runtime, judge_job(spec.name), prestarted, dagster_run_id)


@dataclass
class Promotion:
    run_id: str
    previous_run_id: str
    dagster_run_id: str


def materialize_promotion(
    spec: EvalSpec, run_id: str, *, instance: dg.DagsterInstance, runtime: RunOptions | None = None,
    recorded_previous_run_id: str | None = None,
) -> Promotion:
    """Materialize the eval's ``baseline`` asset for ``run_id`` (the atomic pointer + history).

    With ``recorded_previous_run_id`` the pointer was written already (``evalh promote``):
    the materialization records it, with that as the run it replaced."""
    config: dict = {"run_id": run_id}
    if recorded_previous_run_id is not None:
        config["recorded_previous_run_id"] = recorded_previous_run_id
    dagster_run_id, _ = _execute(
        promote_job(spec.name), instance, spec, runtime, tags={RUN_ID_TAG: run_id, TRIGGER_TAG: "cli"},
        run_config={"ops": {f"{spec.name}__baseline": {"config": config}}},
    )
    event = instance.get_latest_materialization_event(dg.AssetKey([spec.name, "baseline"]))
    previous = event.asset_materialization.metadata["previous_run_id"].value if event else ""
    return Promotion(run_id=run_id, previous_run_id=previous, dagster_run_id=dagster_run_id)


def _materialize(
    spec: EvalSpec, run_id: str, instance: dg.DagsterInstance, runtime: RunOptions | None, job_name: str,
    prestarted: Prestarted | None = None, dagster_run_id: str | None = None,
) -> RunOutcome:
    tags = {RUN_ID_TAG: run_id, TRIGGER_TAG: "cli"}
    if runtime is not None and runtime.reuse_from:
        tags[REUSE_FROM_TAG] = runtime.reuse_from
    if runtime is not None and runtime.rejudge_all:
        tags[REJUDGE_TAG] = "all"
    # No gc.freeze() around this (there was one): with the cells started before Dagster
    # (defs/overlap.py) it saves nothing measurable. N=10,000 x 2 cells, median CPU s of 3-4
    # alternated runs, with/without: forked engine 5.97/5.75, threaded fallback 6.61/6.47.
    dagster_run_id, failed = _execute(job_name, instance, spec, runtime, tags=tags, prestarted=prestarted,
                                      run_id=dagster_run_id)
    run_dir = run_directory(spec, run_id)
    return RunOutcome(run_dir=run_dir, summary=load_summary(run_dir), dagster_run_ids=[dagster_run_id],
                      failed_checks=failed)


def _execute(
    job_name: str, instance: dg.DagsterInstance, spec: EvalSpec, options: RunOptions | None,
    *, tags: dict[str, str], run_config: dict | None = None, prestarted: Prestarted | None = None,
    run_id: str | None = None,
) -> tuple[str, list[str]]:
    """Run one job in-process; returns its Dagster run id and the asset checks that failed.

    A failed check is a verdict reported to the caller, not an infrastructure failure, even
    when it is blocking (the run's data is complete as far as it got).
    """
    options = options or RunOptions()
    runtime = EvalhRuntime.for_session(Session(progress=options.progress, spec=spec, prestarted=prestarted),
                                       options.max_concurrency)
    run_id = run_id or str(uuid.uuid4())
    try:
        job = build_definitions([spec], runtime)[0].resolve_job_def(job_name)
        with _sigterm_kept():
            _execute_job(job, instance, tags, run_id, run_config)
    except ConfigError:
        raise
    except dg.DagsterExecutionInterruptedError:
        raise KeyboardInterrupt from None
    except DagsterAssetCheckFailedError:
        pass  # a blocking gate failed: reported below with the other failed checks
    except dg.DagsterUserCodeExecutionError as exc:
        cause = exc.user_exception
        if isinstance(cause, ConfigError):
            raise cause from None
        if isinstance(cause, dg.Failure):
            raise InfrastructureError(f"{job_name} failed: {cause.description}") from None
        raise InfrastructureError(f"{job_name} failed: {type(cause).__name__}: {cause}") from exc
    except Exception as exc:  # noqa: BLE001 - anything else is the orchestration failing
        raise InfrastructureError(f"{job_name} failed: {type(exc).__name__}: {exc}") from exc
    finally:
        runtime.close()
    return run_id, _failed_checks(instance, run_id)


def _execute_job(job: dg.JobDefinition, instance: dg.DagsterInstance, tags: dict[str, str], run_id: str,
                 run_config: dict | None) -> None:
    job.execute_in_process(
        instance=instance, tags=tags, run_id=run_id,
        run_config={
            **(run_config or {}),
            # The event log keeps every event for the UI; evalh reports failures itself
            # (EVALH_LOG_LEVEL=DEBUG shows Dagster's own log).
            "loggers": {"console": {"config": {"log_level": os.environ.get("EVALH_LOG_LEVEL", "CRITICAL")}}},
        },
    )


@contextmanager
def _sigterm_kept() -> Iterator[None]:
    """Give SIGTERM back the action it had before the run.

    Dagster's in-process execution points SIGTERM at SIGINT's handler when it restores its
    interrupt handlers; where SIGINT is ignored (a command started in the background of a
    script), SIGTERM is then ignored too, by this process and every process it starts
    after (they inherit it): nothing could stop them with a plain kill."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _failed_checks(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """``asset: check`` names of the checks that failed in a Dagster run."""
    failed = []
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = record.dagster_event.event_specific_data
        if not evaluation.passed:
            failed.append(f"{evaluation.asset_key.to_user_string()}: {evaluation.check_name}")
    return failed


__all__ = ["InfrastructureError", "Promotion", "RunOptions", "RunOutcome", "local_instance", "materialize_promotion",
           "materialize_reevaluation", "materialize_run"]
