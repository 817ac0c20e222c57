"""Dagster's own buttons on any run of an eval, whoever started it: "Re-execute all" works on the
same partition with resume semantics (no cell with a trace is called again), and one check
executed alone checks the partition it is given."""

from __future__ import annotations

import json
import tomllib

import dagster as dg
import yaml

from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.launch import CODE_LOCATION, materialize_run
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.store.run_dir import new_run_id
from tests.conftest import REPO, write_eval
from tests.defs.reexecution_target import EVAL_PATH_ENV, reexecuted_run_job


def _calls(log):
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()] if log.exists() else []


def test_reexecute_all_of_a_cli_run_works_on_its_partition_and_calls_only_cells_without_a_trace(
        tmp_path, instance, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("EVALH_TEST_CALL_LOG", str(log))
    path = write_eval(tmp_path / "toy", cases=4)
    monkeypatch.setenv(EVAL_PATH_ENV, str(path))
    spec = load_eval(path)
    run_id = new_run_id(spec.name)
    outcome = materialize_run(spec, run_id, instance=instance)
    lines = outcome.run_dir.traces.read_text().splitlines(keepends=True)
    outcome.run_dir.traces.write_text("".join(lines[:5]))  # as if killed: three cells lost
    log.unlink()

    parent = instance.get_run_by_id(outcome.dagster_run_ids[0])
    # As the UI's "Re-execute all" does: the parent's plan, the parent's tags (its partition among them).
    with dg.execute_job(dg.reconstructable(reexecuted_run_job), instance, tags=parent.tags,
                        reexecution_options=dg.ReexecutionOptions(parent_run_id=parent.run_id)) as result:
        assert result.success, [e.message for e in result.all_events if e.is_failure or e.event_type_value == "PIPELINE_FAILURE"][:3] + [str(e.event_specific_data)[:3000] for e in result.all_events if e.is_step_failure][:1]
        again = result.dagster_run

    assert again.tags["dagster/partition"] == run_id
    assert len(_calls(log)) == 3  # only the cells without a trace
    materialized = {e.dagster_event.event_specific_data.materialization.partition
                    for e in instance.all_logs(again.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)}
    assert materialized == {run_id}
    assert len(outcome.run_dir.traces.read_text().splitlines()) == 8


def test_one_check_executed_alone_checks_the_partition_it_is_given(tmp_path, instance):
    spec = load_eval(write_eval(tmp_path / "toy", cases=3))
    first, second = new_run_id(spec.name), new_run_id(spec.name)
    materialize_run(spec, first, instance=instance)
    materialize_run(spec, second, instance=instance)
    (second_dir,) = [p for p in (tmp_path / "toy" / "runs").iterdir() if p.name == second]
    (second_dir / "traces.jsonl").write_text("")  # the second run is now incomplete
    defs, _ = build_definitions([spec])
    check = dg.AssetCheckKey(dg.AssetKey(["toy", "summary"]), "complete")
    job = defs.resolve_implicit_global_asset_job_def().get_subset(asset_selection=set(), asset_check_selection={check})

    from evalh_pipeline.runner.stages import write_summary
    from evalh_pipeline.store.run_dir import RunDirectory

    write_summary(spec, RunDirectory(second_dir))
    results = {}
    for run_id in (first, second):
        result = job.execute_in_process(instance=instance, partition_key=run_id)
        (evaluation,) = result.get_asset_check_evaluations()
        results[run_id] = (evaluation.partition, evaluation.passed)

    assert results == {first: (first, True), second: (second, False)}


def test_a_cli_run_names_the_code_location_the_ui_serves_so_its_buttons_find_the_job(tmp_path, instance):
    # Without an origin the UI's "Re-execute all" / "From failure" fail ("Expected non-None value"):
    # this is what a Dagster changing how evalh creates its runs (launch.execute_as_code_location_run) breaks.
    spec = load_eval(write_eval(tmp_path / "toy", cases=2))
    outcome = materialize_run(spec, new_run_id(spec.name), instance=instance)
    run = instance.get_run_by_id(outcome.dagster_run_ids[0])

    origin = run.remote_job_origin
    assert origin is not None
    assert origin.repository_origin.code_location_origin.location_name == CODE_LOCATION
    assert origin.repository_origin.repository_name == build_definitions([spec])[0].get_repository_def().name
    assert origin.job_name == run.job_name == "toy__run"
    assert run.tags["dagster/code_location"] == CODE_LOCATION
    assert run.tags["dagster/partition"] == outcome.run_dir.path.name
    assert run.status == dg.DagsterRunStatus.SUCCESS


def test_the_code_location_name_is_the_one_the_workspace_and_pyproject_state():
    (location,) = yaml.safe_load((REPO / "workspace.yaml").read_text())["load_from"]
    assert location["python_file"]["location_name"] == CODE_LOCATION
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert pyproject["tool"]["dagster"]["code_location_name"] == CODE_LOCATION
