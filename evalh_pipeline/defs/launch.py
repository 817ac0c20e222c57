"""Materialize an eval's assets against a Dagster instance: what `evalh run` does.

A run of an eval is two Dagster runs against the same instance the UI reads:
``<eval>__cells`` (cases, traces and results for every variant of the run, as one
single-run partition range) and ``<eval>__summarize`` (summary, one per run).
"""

from __future__ import annotations

import gc
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg

from evalh_pipeline.config import ConfigError, EvalSpec
from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.evals.assets import EvalAssets
from evalh_pipeline.defs.evals.partitions import runs_partitions, variant_range_tags
from evalh_pipeline.defs.resources import EvalhRuntime
from evalh_pipeline.models import RunSummary
from evalh_pipeline.runner.stages import load_summary, prepare_cases
from evalh_pipeline.store.run_dir import RunDirectory, run_directory

DEFAULT_HOME = ".dagster_home"
_INSTANCE_YAML = """\
# Written by evalh for a local, embedded Dagster instance. `dagster dev` with
# DAGSTER_HOME pointing here shows the runs `evalh` made.
telemetry:
  enabled: false
"""


class InfrastructureError(RuntimeError):
    """Dagster could not materialize the assets for a reason other than the user's config."""


@dataclass
class RunOutcome:
    run_dir: RunDirectory
    summary: RunSummary
    dagster_run_ids: list[str] = field(default_factory=list)
    failed_checks: list[str] = field(default_factory=list)


def local_instance() -> dg.DagsterInstance:
    """``$DAGSTER_HOME`` if set, else ``./.dagster_home`` (created on first use).

    The environment is only read: the instance is opened from its folder, so nothing
    else in the process sees a DAGSTER_HOME it did not set.
    """
    if os.environ.get("DAGSTER_HOME"):
        return dg.DagsterInstance.get()
    path = Path(DEFAULT_HOME).resolve()
    path.mkdir(parents=True, exist_ok=True)
    config = path / "dagster.yaml"
    if not config.exists():
        config.write_text(_INSTANCE_YAML)
    return dg.DagsterInstance.from_config(str(path))


def materialize_run(
    spec: EvalSpec, run_id: str, *, instance: dg.DagsterInstance, runtime: EvalhRuntime | None = None,
    snapshot_cases: bool = False,
) -> RunOutcome:
    """Add the run partition (if new) and materialize cases, traces, results and summary.

    For an existing run this resumes it: only cells without a trace are run.

    With ``snapshot_cases`` the run directory (header + cases.jsonl) is written from
    ``spec`` itself before Dagster runs. This is how CLI selection (``--limit``,
    ``--filter``: a ``spec`` that differs from the eval.yaml on disk) reaches the run: the
    ``cases`` asset re-reads the live eval.yaml, finds the run directory already there and
    keeps its snapshot, as on resume. A bad dataset row raises ConfigError before anything
    is published.
    """
    if snapshot_cases:
        prepare_cases(spec, run_id)
    return _materialize(spec, run_id, instance, runtime, lambda handles: handles.cells_job)


def materialize_reevaluation(
    spec: EvalSpec, run_id: str, *, instance: dg.DagsterInstance, runtime: EvalhRuntime | None = None
) -> RunOutcome:
    """Rematerialize results (every variant) and summary of a run from its persisted traces."""
    return _materialize(spec, run_id, instance, runtime, lambda handles: handles.judge_job)


@dataclass
class Promotion:
    run_id: str
    previous_run_id: str
    dagster_run_id: str


def materialize_promotion(
    spec: EvalSpec, run_id: str, *, instance: dg.DagsterInstance, runtime: EvalhRuntime | None = None
) -> Promotion:
    """Materialize the eval's ``baseline`` asset for ``run_id`` (the atomic pointer + history)."""
    defs, built = build_definitions([spec], runtime)
    handles = built[spec.name]
    op = f"{spec.name}__baseline"
    dagster_run_id, _ = _execute(defs, handles.promote_job, instance,
                                 run_config={"ops": {op: {"config": {"run_id": run_id}}}})
    event = instance.get_latest_materialization_event(dg.AssetKey([spec.name, "baseline"]))
    previous = event.asset_materialization.metadata["previous_run_id"].value if event else ""
    return Promotion(run_id=run_id, previous_run_id=previous, dagster_run_id=dagster_run_id)


def _materialize(
    spec: EvalSpec, run_id: str, instance: dg.DagsterInstance, runtime: EvalhRuntime | None,
    variant_job: Callable[[EvalAssets], str],
) -> RunOutcome:
    """One single-run range over every variant of the run, then the run's summary."""
    defs, built = build_definitions([spec], runtime)
    handles = built[spec.name]
    partitions = runs_partitions(spec.name).name
    if not instance.has_dynamic_partition(partitions, run_id):
        instance.add_dynamic_partitions(partitions, [run_id])
    # Dagster's object graph is large and outlives the run; keep the cyclic GC from
    # re-walking it on every collection the cell loop's allocations trigger (~20% of a run).
    gc.freeze()
    try:
        executed = [
            _execute(defs, variant_job(handles), instance, tags=variant_range_tags(run_id, spec.variant_names)),
            _execute(defs, handles.summarize_job, instance, partition_key=run_id, gated=True),
        ]
    finally:
        gc.unfreeze()
    run_dir = run_directory(spec, run_id)
    return RunOutcome(
        run_dir=run_dir,
        summary=load_summary(run_dir),
        dagster_run_ids=[dagster_id for dagster_id, _ in executed],
        failed_checks=[check for _, failed in executed for check in failed],
    )


def _execute(
    defs: dg.Definitions, job_name: str, instance: dg.DagsterInstance, *,
    partition_key: str | None = None, tags: dict[str, str] | None = None, run_config: dict | None = None,
    gated: bool = False,
) -> tuple[str, list[str]]:
    """Run one job in-process; returns its Dagster run id and the asset checks that failed.

    With ``gated`` the job carries asset checks: a failed blocking check fails the Dagster
    run, but the data is complete, so it is a verdict reported to the caller, not an
    infrastructure failure. Every check still runs (the run is not aborted at the first).
    """
    job = defs.resolve_job_def(job_name)
    run_id = str(uuid.uuid4())
    try:
        result = job.execute_in_process(
            instance=instance, partition_key=partition_key, tags=tags, raise_on_error=not gated, run_id=run_id,
            run_config={
                **(run_config or {}),
                # The event log keeps every event for the UI; evalh reports failures itself
                # (EVALH_LOG_LEVEL=DEBUG shows Dagster's own log).
                "loggers": {"console": {"config": {"log_level": os.environ.get("EVALH_LOG_LEVEL", "CRITICAL")}}},
            },
        )
    except ConfigError:
        raise
    except dg.DagsterExecutionInterruptedError:
        raise KeyboardInterrupt from None
    except dg.DagsterUserCodeExecutionError as exc:
        cause = exc.user_exception
        if isinstance(cause, ConfigError):
            raise cause from None
        raise InfrastructureError(f"{job_name} failed: {type(cause).__name__}: {cause}") from exc
    except Exception as exc:  # noqa: BLE001 - anything else is the orchestration failing
        raise InfrastructureError(f"{job_name} failed: {type(exc).__name__}: {exc}") from exc
    failed = _failed_checks(instance, run_id)
    if not result.success:
        failed_steps = {e.step_key for e in result.all_events if e.is_step_failure}
        check_steps = {e.step_key for e in result.all_events if e.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION}
        if not failed or not failed_steps <= check_steps:
            messages = [e.message for e in result.all_events if e.is_step_failure]
            raise InfrastructureError(f"{job_name} did not succeed (Dagster run {run_id}): {' | '.join(messages)}")
    return run_id, failed


def _failed_checks(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """``asset/check`` names of the checks that failed in a Dagster run."""
    failed = []
    for record in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION):
        evaluation = record.dagster_event.event_specific_data
        if not evaluation.passed:
            failed.append(f"{evaluation.asset_key.to_user_string()}: {evaluation.check_name}")
    return failed
