"""A run in which no system answered any cell fails its Dagster run, the cause first,
after every trace is written; fixed, `retry-failed`'s route finishes it."""

from __future__ import annotations

import json

import dagster as dg
import pytest

from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.launch import materialize_run
from evalh_pipeline.defs.run_options import NoSystemAnswered
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.retry import prepare_retry
from evalh_pipeline.store.jsonl import iter_lines
from evalh_pipeline.store.run_dir import new_run_id, run_directory
from tests.support.evals import STEADY_SYSTEMS, write_eval
from tests.defs.support import execute_for_partition

CAUSE = "config_error: cannot import module 'stub_agnet' for target 'stub_agnet:run'"


def _misspelt(tmp_path):
    return load_eval(write_eval(tmp_path / "toy", cases=3, systems=STEADY_SYSTEMS.replace("stub_agent", "stub_agnet")))


def test_the_ui_route_fails_the_run_on_the_traces_step_with_the_cause_on_the_first_line(tmp_path, instance):
    spec = _misspelt(tmp_path)
    defs, _ = build_definitions([spec])
    run_id = new_run_id(spec.name)
    result = execute_for_partition(defs, "toy__run", "toy", run_id, instance, raise_on_error=False)
    assert not result.success
    assert instance.get_run_by_id(result.run_id).status == dg.DagsterRunStatus.FAILURE
    (failure,) = result.get_step_failure_events()
    assert failure.step_key.endswith("traces")
    description = failure.step_failure_data.user_failure_data.description
    assert description.splitlines()[0].startswith(CAUSE), description
    assert "(every cell; no system answered any of the 6 cells of this run)" in description
    assert failure.step_failure_data.error.message.splitlines()[0].endswith(description.splitlines()[0])
    # Nothing is lost: all six traces are written, each with the error; nothing downstream ran.
    run_dir = run_directory(spec, run_id)
    traces = [json.loads(line) for _, line in iter_lines(run_dir.traces)]
    assert len(traces) == 6 and {t["error"]["type"] for t in traces} == {"config_error"}
    assert not run_dir.summary.exists()
    materialized = {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()}
    assert materialized == {"toy/cases"}


def test_the_cli_route_raises_the_cause_and_a_fixed_target_finishes_the_run(tmp_path, instance):
    spec = _misspelt(tmp_path)
    run_id = new_run_id(spec.name)
    with pytest.raises(NoSystemAnswered) as raised:
        materialize_run(spec, run_id, instance=instance)
    assert str(raised.value).startswith(CAUSE) and raised.value.error_type == "config_error"
    (run,) = instance.get_runs()
    assert run.status == dg.DagsterRunStatus.FAILURE

    spec.path.write_text(spec.path.read_text().replace("stub_agnet", "stub_agent"))
    fixed = load_eval(spec.path)
    run_dir = run_directory(fixed, run_id)
    assert prepare_retry(run_dir, include_evaluator_failures=False) == 6
    outcome = materialize_run(fixed, run_id, instance=instance)
    assert [v.cases_errored for v in outcome.summary.variants] == [0, 0]
    assert instance.get_runs()[0].status == dg.DagsterRunStatus.SUCCESS
