"""Sensors of an eval: a new run when its fixtures change, and one run per tick of its drift cron.

Both are ``STOPPED`` by default: nothing starts in ``dagster dev`` until a sensor is
turned on in the UI (or ``dagster sensor start``).

- ``<eval>__fixtures_changed`` fingerprints the fixtures (store/fixtures.py): the sha256
  of the dataset file, the git ``HEAD`` of the eval's repository and, with
  ``workspace.copy_from``, that tree's ``HEAD`` or content hash. The cursor is the last
  fingerprint seen. The first evaluation (no cursor) only records the fingerprint and
  requests nothing: turning the sensor on is not a fixture change. A later change adds a
  run partition and requests one ``<eval>__cells`` run over every variant of it (run key
  ``fixtures:<fingerprint>``).
- ``<eval>__scheduled_drift`` requests one ``<eval>__cells`` run per tick of
  ``schedule.drift_cron`` (in ``schedule.timezone``; default ``0 0 * * *`` UTC), run key
  ``drift:<tick>``. The cursor is the last tick it handled; its first evaluation only
  records the latest tick, so the first run starts at the next one. Ticks missed while
  the daemon was down are not caught up: only the latest one gets a run. (A Dagster
  schedule cannot add the dynamic run partition; a sensor can.)

A sensor can only start a job; like ``evalh run``, the run covers every variant of the
new run partition through the single-run partition range tags. ``<eval>__summarize_sensor_runs``
then materializes the run's ``summary`` and ``drift`` (and so evaluates the gates,
including the one against the promoted baseline).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import dagster as dg

from evalh_pipeline.config.cron import parse_cron
from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.defs.evals.partitions import runs_partitions, variant_range_tags
from evalh_pipeline.store.fixtures import NO_GIT, fixture_fingerprint
from evalh_pipeline.store.run_dir import new_run_id

# How often the drift sensor looks at the clock: a cron has minute resolution.
DRIFT_INTERVAL_SECONDS = 60
FIXTURE_COMMIT_TAG = "evalh/fixture_commit"
FIXTURE_HASH_TAG = "evalh/fixture_hash"
FIXTURE_WORKSPACE_TAG = "evalh/fixture_workspace"
TRIGGER_TAG = "evalh/trigger"
DRIFT_TICK_TAG = "evalh/drift_tick"


def _cells_job(spec: EvalSpec) -> str:
    return f"{spec.name}__cells"


def _run_key_used(instance: dg.DagsterInstance, job_name: str, run_key: str) -> bool:
    """A run with this run key exists already (Dagster would skip the request)."""
    return instance.get_runs_count(dg.RunsFilter(job_name=job_name, tags={"dagster/run_key": run_key})) > 0


def _new_run(spec: EvalSpec, run_key: str, tags: dict[str, str], now: datetime | None = None) -> dg.SensorResult:
    """Add a run partition and request ``<eval>__cells`` over every variant of it."""
    run_id = new_run_id(spec.name, now)
    return dg.SensorResult(
        dynamic_partitions_requests=[
            dg.AddDynamicPartitionsRequest(partitions_def_name=runs_partitions(spec.name).name, partition_keys=[run_id]),
        ],
        run_requests=[dg.RunRequest(
            job_name=_cells_job(spec),
            run_key=run_key,
            tags={**variant_range_tags(run_id, spec.variant_names), "evalh/run_id": run_id, **tags},
        )],
    )


def build_fixture_sensor(spec: EvalSpec) -> dg.SensorDefinition:
    """``<eval>__fixtures_changed``: a new run when the dataset or the repo's HEAD changes."""

    @dg.sensor(
        name=f"{spec.name}__fixtures_changed",
        job_name=_cells_job(spec),
        default_status=dg.DefaultSensorStatus.STOPPED,
        description=(
            f"Start a new run of `{spec.name}` (every variant) when its fixtures change: the dataset's "
            "sha256, the git HEAD of the eval's repository or the workspace's copy_from tree. "
            "The first tick only records the fingerprint."
        ),
    )
    def fixtures_changed(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        try:
            current = fixture_fingerprint(spec)
        except OSError as exc:
            return dg.SkipReason(f"cannot read the dataset {spec.dataset_path}: {exc}")
        if context.cursor is None:
            context.update_cursor(current.key)
            return dg.SkipReason(f"first evaluation: recorded fixtures {current.key}; no run requested")
        if context.cursor == current.key:
            return dg.SkipReason(f"fixtures unchanged ({current.key})")
        context.update_cursor(current.key)
        run_key = f"fixtures:{current.key}"
        if _run_key_used(context.instance, _cells_job(spec), run_key):
            return dg.SkipReason(f"fixtures {current.key} were already run (run key {run_key})")
        return _new_run(spec, run_key, {
            TRIGGER_TAG: "fixtures",
            FIXTURE_COMMIT_TAG: current.commit or NO_GIT,
            FIXTURE_HASH_TAG: current.dataset_hash,
            **({FIXTURE_WORKSPACE_TAG: current.workspace} if current.workspace else {}),
        })

    return fixtures_changed


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def build_drift_sensor(spec: EvalSpec, clock: Callable[[], datetime] = _utc_now) -> dg.SensorDefinition:
    """``<eval>__scheduled_drift``: one new run per tick of ``schedule.drift_cron`` (``clock`` is for tests)."""
    schedule = spec.config.schedule
    cron = parse_cron(schedule.drift_cron)

    @dg.sensor(
        name=f"{spec.name}__scheduled_drift",
        job_name=_cells_job(spec),
        minimum_interval_seconds=DRIFT_INTERVAL_SECONDS,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description=(
            f"Start one run of `{spec.name}` (every variant) at each tick of `{schedule.drift_cron}` "
            f"({schedule.timezone}), to watch for drift against the promoted baseline."
        ),
    )
    def scheduled_drift(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        now = clock()
        tick = cron.latest_tick(now, schedule.timezone).astimezone(timezone.utc)
        tick_key = tick.isoformat()
        if context.cursor is None:
            context.update_cursor(tick_key)
            return dg.SkipReason(f"first evaluation: recorded the tick of {tick_key}; the next tick starts a run")
        if datetime.fromisoformat(context.cursor) >= tick:
            return dg.SkipReason(f"no new tick of {schedule.drift_cron!r} since {context.cursor}")
        run_key = f"drift:{tick_key}"
        context.update_cursor(tick_key)
        if _run_key_used(context.instance, _cells_job(spec), run_key):
            return dg.SkipReason(f"the run of the tick {tick_key} exists already (run key {run_key})")
        return _new_run(spec, run_key, {TRIGGER_TAG: "schedule", DRIFT_TICK_TAG: tick_key}, now)

    return scheduled_drift


def build_summary_follow_up(spec: EvalSpec, summarize_job: Any) -> dg.SensorDefinition:
    """After a sensor-started ``<eval>__cells`` run succeeds, summarize that run (and so
    evaluate its gates): CLI runs summarize themselves, sensor runs need this step."""

    @dg.run_status_sensor(
        name=f"{spec.name}__summarize_sensor_runs",
        run_status=dg.DagsterRunStatus.SUCCESS,
        request_job=summarize_job,
        default_status=dg.DefaultSensorStatus.STOPPED,
        description=f"Summarize (and compare with the promoted baseline) each `{_cells_job(spec)}` run "
                    "started by the fixture or drift sensor.",
    )
    def summarize_sensor_runs(context: dg.RunStatusSensorContext):
        run = context.dagster_run
        run_id = run.tags.get("evalh/run_id")
        if run.job_name != _cells_job(spec) or TRIGGER_TAG not in run.tags or not run_id:
            return dg.SkipReason("not a sensor-started cells run of this eval")
        return dg.RunRequest(run_key=f"summary:{run_id}", partition_key=run_id)

    return summarize_sensor_runs


def build_eval_sensors(spec: EvalSpec, summarize_job: Any) -> list[dg.SensorDefinition]:
    """The eval's automation: fixture and scheduled runs, and the summary and drift that follow them."""
    return [build_fixture_sensor(spec), build_drift_sensor(spec), build_summary_follow_up(spec, summarize_job)]
