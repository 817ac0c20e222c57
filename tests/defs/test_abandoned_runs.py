"""The CLI's Dagster runs whose evalh died (no process holds their lease) are marked failed,
by the next command on the run and by the code location's sensor, with the command that
finishes the eval run; nothing else is: not a run whose evalh still executes it, not a UI
re-execution of a CLI run (it carries the parent's ``evalh/trigger=cli`` tag but is the
daemon's), not a run the UI launched. A real killed `evalh` under a real daemon:
tests/e2e/test_abandoned_cli_runs.py."""

from __future__ import annotations

import dagster as dg
from dagster._core.test_utils import create_run_for_test  # what Dagster's own tests use to record a run

from evalh_pipeline.defs.cli_runs import ENDED_WITHOUT_FINISHING, build_abandoned_runs_sensor, executing, lease_path
from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.evals.names import (
    ABANDONED_RUNS_SENSOR,
    EVAL_FILE_TAG,
    EVAL_TAG,
    PARTITION_TAG,
    RUN_DIR_TAG,
    TRIGGER_TAG,
)
from evalh_pipeline.defs.launch import end_abandoned_runs

CLI_TAGS = {PARTITION_TAG: "toy-1", EVAL_TAG: "toy", TRIGGER_TAG: "cli"}


def test_a_killed_cli_run_is_marked_failed_with_the_reason(instance):
    killed = create_run_for_test(instance, job_name="toy__run", tags=CLI_TAGS, status=dg.DagsterRunStatus.STARTED)

    assert end_abandoned_runs(instance, "toy", "toy-1", "finished by `evalh run`") == [killed.run_id]
    after = instance.get_run_by_id(killed.run_id)
    assert after is not None and after.status == dg.DagsterRunStatus.FAILURE


def test_a_ui_reexecution_of_a_cli_run_is_left_running(instance):
    parent = create_run_for_test(instance, job_name="toy__run", tags=CLI_TAGS, status=dg.DagsterRunStatus.FAILURE)
    # "Re-execute from failure" in the UI: the parent's tags, the parent's id.
    child = create_run_for_test(instance, job_name="toy__run", tags=CLI_TAGS, status=dg.DagsterRunStatus.STARTED,
                                parent_run_id=parent.run_id, root_run_id=parent.run_id)

    assert end_abandoned_runs(instance, "toy", "toy-1", "finished by `evalh run`") == []
    after = instance.get_run_by_id(child.run_id)
    assert after is not None and after.status == dg.DagsterRunStatus.STARTED


def test_runs_of_other_partitions_and_evals_are_left_alone(instance):
    other_partition = create_run_for_test(instance, job_name="toy__run", tags={**CLI_TAGS, PARTITION_TAG: "toy-2"},
                                          status=dg.DagsterRunStatus.STARTED)
    other_eval = create_run_for_test(instance, job_name="other__run", tags={**CLI_TAGS, EVAL_TAG: "other"},
                                     status=dg.DagsterRunStatus.STARTED)

    assert end_abandoned_runs(instance, "toy", "toy-1", "finished by `evalh run`") == []
    for run in (other_partition, other_eval):
        after = instance.get_run_by_id(run.run_id)
        assert after is not None and after.status == dg.DagsterRunStatus.STARTED


def test_a_cli_run_whose_evalh_holds_its_lease_is_left_running(instance):
    live = create_run_for_test(instance, job_name="toy__run", tags=CLI_TAGS, status=dg.DagsterRunStatus.STARTED)

    with executing(instance, live.run_id):  # what `evalh` holds while it executes the run
        assert end_abandoned_runs(instance, "toy", "toy-1", "finished by `evalh run`") == []
        assert _tick(instance).skip_message == "no CLI run in progress without its evalh"
    after = instance.get_run_by_id(live.run_id)
    assert after is not None and after.status == dg.DagsterRunStatus.STARTED


def test_the_sensor_marks_failed_every_abandoned_cli_run_with_the_command_that_finishes_it(instance, tmp_path):
    run_dir = tmp_path / "runs" / "toy-1"
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text('{"run_id": "toy-1", "eval_name": "toy"}\n')
    where = {EVAL_FILE_TAG: str(tmp_path / "eval.yaml"), RUN_DIR_TAG: str(run_dir)}
    killed_run = _killed(instance, job_name="toy__run", tags={**CLI_TAGS, **where})
    killed_judge = _killed(instance, job_name="toy__judge", tags={**CLI_TAGS, **where})
    ui_run = create_run_for_test(instance, job_name="toy__run", tags={PARTITION_TAG: "toy-1", EVAL_TAG: "toy"},
                                 status=dg.DagsterRunStatus.STARTED)

    tick = _tick(instance)

    assert set(tick.skip_message.rsplit(": ", 1)[1].split(", ")) == {killed_run.run_id, killed_judge.run_id}
    assert _failure_message(instance, killed_run.run_id) == (
        f"{ENDED_WITHOUT_FINISHING}; finish the eval run with: evalh run {tmp_path / 'eval.yaml'} --resume {run_dir}")
    assert _failure_message(instance, killed_judge.run_id) == (
        f"{ENDED_WITHOUT_FINISHING}; finish the eval run with: evalh re-evaluate {run_dir}")
    after = instance.get_run_by_id(ui_run.run_id)
    assert after is not None and after.status == dg.DagsterRunStatus.STARTED  # the daemon's to watch
    assert _tick(instance).skip_message == "no CLI run in progress without its evalh"
    assert not lease_path(instance, killed_run.run_id).exists()  # nothing left behind


def test_a_run_whose_lease_is_not_in_this_instance_folder_is_left_to_the_command_that_resumes_it(instance):
    # Executed where this folder is not seen (another machine sharing the run storage), or
    # by an evalh from before leases: the sensor cannot tell, the resuming command can.
    elsewhere = create_run_for_test(instance, job_name="toy__run", tags=CLI_TAGS, status=dg.DagsterRunStatus.STARTED)

    assert _tick(instance).skip_message == "no CLI run in progress without its evalh"
    assert instance.get_run_by_id(elsewhere.run_id).status == dg.DagsterRunStatus.STARTED
    assert end_abandoned_runs(instance, "toy", "toy-1", "finished by `evalh run`") == [elsewhere.run_id]


def test_a_run_killed_before_its_run_directory_existed_says_to_start_a_new_run(instance, tmp_path):
    never_written = tmp_path / "runs" / "toy-1"
    killed = _killed(instance, job_name="toy__run", tags={
        **CLI_TAGS, EVAL_FILE_TAG: str(tmp_path / "eval.yaml"), RUN_DIR_TAG: str(never_written)})

    _tick(instance)

    assert _failure_message(instance, killed.run_id) == (
        f"{ENDED_WITHOUT_FINISHING}; its run directory {never_written} was never written; "
        f"start a new run with: evalh run {tmp_path / 'eval.yaml'}")


def test_the_sensor_is_in_the_code_location_and_on_by_default():
    sensor = build_definitions([])[0].resolve_sensor_def(ABANDONED_RUNS_SENSOR)

    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert 5 <= sensor.minimum_interval_seconds <= 15


def _killed(instance, **run):
    """A CLI run recorded in progress whose evalh was killed: its lease file is left, held by nobody."""
    killed = create_run_for_test(instance, status=dg.DagsterRunStatus.STARTED, **run)
    lease_path(instance, killed.run_id).parent.mkdir(parents=True, exist_ok=True)
    lease_path(instance, killed.run_id).touch()
    return killed


def _tick(instance):
    context = dg.build_sensor_context(instance=instance)
    return build_abandoned_runs_sensor().evaluate_tick(context)


def _failure_message(instance, dagster_run_id):
    (failure,) = instance.all_logs(dagster_run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    run = instance.get_run_by_id(dagster_run_id)
    assert run is not None and run.status == dg.DagsterRunStatus.FAILURE
    return failure.dagster_event.message
