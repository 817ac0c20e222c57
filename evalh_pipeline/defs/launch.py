"""Materialize an eval's assets against a Dagster instance: what `evalh run` does.

A run of an eval is two Dagster runs against the same instance the UI reads:
``<eval>__cells`` (cases, traces and results for every variant of the run, as one
single-run partition range) and ``<eval>__summarize`` (summary, one per run).
"""

from __future__ import annotations

import gc
import os
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
from evalh_pipeline.runner.stages import load_summary
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


def local_instance() -> dg.DagsterInstance:
    """``$DAGSTER_HOME`` if set, else ``./.dagster_home`` (created on first use)."""
    home = os.environ.get("DAGSTER_HOME")
    if not home:
        path = Path(DEFAULT_HOME).resolve()
        path.mkdir(parents=True, exist_ok=True)
        config = path / "dagster.yaml"
        if not config.exists():
            config.write_text(_INSTANCE_YAML)
        os.environ["DAGSTER_HOME"] = home = str(path)
    return dg.DagsterInstance.get()


def materialize_run(
    spec: EvalSpec, run_id: str, *, instance: dg.DagsterInstance, runtime: EvalhRuntime | None = None
) -> RunOutcome:
    """Add the run partition (if new) and materialize cases, traces, results and summary.

    For an existing run this resumes it: only cells without a trace are run.
    """
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
    dagster_run_id = _execute(defs, handles.promote_job, instance, run_config={"ops": {op: {"config": {"run_id": run_id}}}})
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
        ids = [
            _execute(defs, variant_job(handles), instance, tags=variant_range_tags(run_id, spec.variant_names)),
            _execute(defs, handles.summarize_job, instance, partition_key=run_id),
        ]
    finally:
        gc.unfreeze()
    run_dir = run_directory(spec, run_id)
    return RunOutcome(run_dir=run_dir, summary=load_summary(run_dir), dagster_run_ids=ids)


def _execute(
    defs: dg.Definitions, job_name: str, instance: dg.DagsterInstance, *,
    partition_key: str | None = None, tags: dict[str, str] | None = None, run_config: dict | None = None,
) -> str:
    job = defs.resolve_job_def(job_name)
    try:
        result = job.execute_in_process(
            instance=instance, partition_key=partition_key, tags=tags, raise_on_error=True,
            run_config={
                **(run_config or {}),
                # The event log keeps every event for the UI; the console only needs problems.
                "loggers": {"console": {"config": {"log_level": os.environ.get("EVALH_LOG_LEVEL", "WARNING")}}},
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
    if not result.success:
        raise InfrastructureError(f"{job_name} did not succeed (Dagster run {result.run_id})")
    return result.run_id
