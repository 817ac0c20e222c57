"""A CLI command that holds a run's lock marks failed the CLI runs of that partition still
recorded as in progress (their evalh was killed), and nothing else: not a UI re-execution
of a CLI run, which carries the parent's ``evalh/trigger=cli`` tag but is the daemon's."""

from __future__ import annotations

import dagster as dg
from dagster._core.test_utils import create_run_for_test  # what Dagster's own tests use to record a run

from evalh_pipeline.defs.evals.names import EVAL_TAG, PARTITION_TAG, TRIGGER_TAG
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
