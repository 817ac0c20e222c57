"""Automation of an eval: one sensor per behaviour, each starting one whole run.

- ``<eval>__fixtures_changed`` starts a run when the eval's own inputs change: the eval
  file, the dataset, the ``copy_from`` tree and files the eval names, versioned by path
  (store/fixtures.py). A commit that touches none of them starts nothing. The cursor is
  the last fingerprint key; the first evaluation only records it.
- ``<eval>__scheduled_drift`` starts a run at each tick of the drift cron
  (``automation.drift_cron``, else ``schedule.drift_cron``; read in ``schedule.timezone``).
  The cursor is the last tick handled; the first evaluation only records the latest tick,
  and ticks missed while the daemon was down get one run, for the latest.

Each request adds the new run's partition (key = a new run id) and requests one
``<eval>__run`` Dagster run of it (cases -> traces -> results -> summary -> drift and every
check) in the same tick (``SensorResult``): no helper sensor follows it. Both read
eval.yaml at every evaluation (a new variant, dataset or cron applies without a reload).
``automation.on_fixture_change: true`` / ``automation.drift_cron`` in eval.yaml make them
running by default; the UI's toggle turns either on or off regardless. While a run started
by either sensor is queued or running, both skip with the reason (at most one automation
run per eval); a fixture change seen meanwhile is picked up once it is over.

With ``automation.reuse_unchanged_traces: true`` a fixture-change run is tagged
``evalh/reuse_from`` with the eval's latest complete run: its traces step copies the traces
whose case, variant and fixture hashes are unchanged (runner/reuse.py) and calls the system
only for the rest; the run's traces materialization and summary.yaml record where from.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timezone

import dagster as dg

from evalh_pipeline.common.git import GitError
from evalh_pipeline.config import ConfigError
from evalh_pipeline.config.cron import parse_cron
from evalh_pipeline.config.spec import EvalSpec
from evalh_pipeline.defs.evals.names import (
    DRIFT_TICK_TAG,
    EVAL_TAG,
    FIXTURE_COMMIT_TAG,
    FIXTURE_KEY_TAG,
    REUSE_FROM_TAG,
    TRIGGER_TAG,
    drift_sensor,
    fixture_sensor,
    run_job,
    runs_partitions,
)
from evalh_pipeline.defs.evals.runs import RELOAD, reload_reason
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.store.fixtures import fixture_fingerprint
from evalh_pipeline.store.run_dir import new_run_id, run_directory

# A fixture commit reaches a completed summary within a minute: one interval plus the run.
FIXTURE_INTERVAL_SECONDS = 15
# A cron has minute resolution; looking twice a minute starts a run within 30 s of its tick.
DRIFT_INTERVAL_SECONDS = 30
AUTOMATION_TRIGGERS = ("fixtures", "schedule")
_ACTIVE = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING,
           dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]


def _utc_now() -> datetime:
    return datetime.now(timezone.utc)


def automation_run_in_progress(instance: dg.DagsterInstance, eval_name: str) -> str:
    """The Dagster run id of a queued or running automation run of the eval ("" if none)."""
    for run in instance.get_runs(dg.RunsFilter(job_name=run_job(eval_name), statuses=_ACTIVE), limit=20):
        if run.tags.get(TRIGGER_TAG) in AUTOMATION_TRIGGERS:
            return run.run_id
    return ""


def latest_complete_run(instance: dg.DagsterInstance, live: EvalSpec) -> str:
    """The run id of the eval's latest run whose summary was complete and whose directory is
    still in the runs folder ("" if none): what a fixture-change run reuses traces from."""
    records = instance.fetch_materializations(dg.AssetKey([live.name, "summary"]), limit=20).records
    for record in records:
        materialization = record.asset_materialization
        if materialization is None:
            continue
        complete = materialization.metadata.get("complete")
        run_id = materialization.partition
        if complete is None or complete.value is not True or not run_id:
            continue
        if run_directory(live, run_id).exists():
            return run_id
    return ""


def _live(spec: EvalSpec) -> EvalSpec | dg.SkipReason:
    try:
        live = load_eval(spec.path, settings=spec.settings)
    except ConfigError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return dg.SkipReason(f"{spec.path} does not load: {first}")
    reason = reload_reason(spec, live)
    return dg.SkipReason(f"{spec.path}: {reason}; {RELOAD}") if reason else live


def _new_run(live: EvalSpec, run_key: str, tags: dict[str, str], now: datetime | None = None) -> dg.SensorResult:
    """Add a new run's partition and request its whole run, in one tick."""
    run_id = new_run_id(live.name, now)
    return dg.SensorResult(
        dynamic_partitions_requests=[dg.AddDynamicPartitionsRequest(runs_partitions(live.name), [run_id])],
        run_requests=[dg.RunRequest(job_name=run_job(live.name), run_key=run_key, partition_key=run_id,
                                    tags={EVAL_TAG: live.name, **tags})],
    )


def build_fixture_sensor(spec: EvalSpec) -> dg.SensorDefinition:
    """``<eval>__fixtures_changed``: a new run when the eval's input paths change."""

    @dg.sensor(
        name=fixture_sensor(spec.name),
        job_name=run_job(spec.name),
        minimum_interval_seconds=FIXTURE_INTERVAL_SECONDS,
        default_status=(dg.DefaultSensorStatus.RUNNING if spec.config.automation.on_fixture_change
                        else dg.DefaultSensorStatus.STOPPED),
        description=(
            f"Start a whole run of `{spec.name}` when its inputs change (eval file, dataset, copy_from tree, "
            "files it names), judged by git blob/tree ids when tracked, content hashes otherwise. "
            "Running by default with `automation: {on_fixture_change: true}` in the eval file."
        ),
    )
    def fixtures_changed(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        live = _live(spec)
        if isinstance(live, dg.SkipReason):
            return live
        try:
            current = fixture_fingerprint(live)
        except (OSError, GitError) as exc:
            return dg.SkipReason(f"cannot read the fixtures of {live.name}: {exc}")
        if context.cursor is None:
            context.update_cursor(current.key)
            return dg.SkipReason(f"first evaluation: recorded fixtures {current.key} ({current.status}); "
                                 "no run requested")
        if context.cursor == current.key:
            return dg.SkipReason(f"fixtures unchanged ({current.key}, {current.status})")
        busy = automation_run_in_progress(context.instance, live.name)
        if busy:
            return dg.SkipReason(f"fixtures changed, but automation run {busy} of {live.name} is in progress: "
                                 "the change starts a run once it is over")
        context.update_cursor(current.key)
        previous = latest_complete_run(context.instance, live) if live.config.automation.reuse_unchanged_traces else ""
        return _new_run(live, f"fixtures:{current.key}", {
            TRIGGER_TAG: "fixtures", FIXTURE_KEY_TAG: current.key,
            **({FIXTURE_COMMIT_TAG: current.commit} if current.commit else {}),
            **({REUSE_FROM_TAG: previous} if previous else {}),
        })

    return fixtures_changed


def build_drift_sensor(spec: EvalSpec, clock: Callable[[], datetime] = _utc_now) -> dg.SensorDefinition:
    """``<eval>__scheduled_drift``: one new run per tick of the drift cron (``clock`` is for tests)."""
    loaded_cron = spec.config.automation.drift_cron or spec.config.schedule.drift_cron

    @dg.sensor(
        name=drift_sensor(spec.name),
        job_name=run_job(spec.name),
        minimum_interval_seconds=DRIFT_INTERVAL_SECONDS,
        default_status=(dg.DefaultSensorStatus.RUNNING if spec.config.automation.drift_cron
                        else dg.DefaultSensorStatus.STOPPED),
        description=(
            f"Start a whole run of `{spec.name}` at each tick of its drift cron (now `{loaded_cron}`, "
            f"{spec.config.schedule.timezone}; read from the eval file at every evaluation), to watch for drift "
            "against the promoted baseline. Running by default with `automation: {drift_cron: ...}`."
        ),
    )
    def scheduled_drift(context: dg.SensorEvaluationContext) -> dg.SensorResult | dg.SkipReason:
        live = _live(spec)
        if isinstance(live, dg.SkipReason):
            return live
        expression = live.config.automation.drift_cron or live.config.schedule.drift_cron
        zone = live.config.schedule.timezone
        now = clock()
        tick = parse_cron(expression).latest_tick(now, zone).astimezone(timezone.utc)
        tick_key = tick.isoformat()
        if context.cursor is None:
            context.update_cursor(tick_key)
            return dg.SkipReason(f"first evaluation: recorded the tick of {tick_key}; the next tick of "
                                 f"{expression!r} starts a run")
        if datetime.fromisoformat(context.cursor) >= tick:
            return dg.SkipReason(f"no new tick of {expression!r} ({zone}) since {context.cursor}")
        busy = automation_run_in_progress(context.instance, live.name)
        context.update_cursor(tick_key)
        if busy:
            return dg.SkipReason(f"tick {tick_key} skipped: automation run {busy} of {live.name} is in progress")
        return _new_run(live, f"drift:{tick_key}", {TRIGGER_TAG: "schedule", DRIFT_TICK_TAG: tick_key}, now)

    return scheduled_drift


def build_eval_sensors(spec: EvalSpec) -> list[dg.SensorDefinition]:
    """The eval's automation: a run on fixture changes and a run per drift-cron tick."""
    return [build_fixture_sensor(spec), build_drift_sensor(spec)]
