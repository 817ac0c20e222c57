"""Dagster's own buttons on any run of an eval, whoever started it: "Re-execute all" works on the
same partition with resume semantics (no cell with a trace is called again), and one check
executed alone checks the partition it is given."""

from __future__ import annotations

import json
import tomllib
from dataclasses import replace

import dagster as dg
import yaml

from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.launch import CODE_LOCATION, materialize_run
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval
from tests.support.paths import REPO
from tests.defs.reexecution_target import served_run_job


def _calls(log):
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()] if log.exists() else []


def test_reexecute_all_of_a_cli_run_works_on_its_partition_and_calls_only_cells_without_a_trace(
        tmp_path, instance, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("EVALH_TEST_CALL_LOG", str(log))
    path = write_eval(tmp_path / "toy", cases=4)
    spec = load_eval(path)
    run_id = new_run_id(spec.name)
    outcome = materialize_run(spec, run_id, instance=instance)
    lines = outcome.run_dir.traces.read_text().splitlines(keepends=True)
    outcome.run_dir.traces.write_text("".join(lines[:5]))  # as if killed: three cells lost
    log.unlink()

    parent = instance.get_run_by_id(outcome.dagster_run_ids[0])
    # As the UI's "Re-execute all" does: the parent's plan, the parent's tags (its partition among them).
    with dg.execute_job(served_run_job(path), instance, tags=parent.tags,
                        reexecution_options=dg.ReexecutionOptions(parent_run_id=parent.run_id)) as result:
        assert result.success, [e.message for e in result.all_events if e.is_failure or e.event_type_value == "PIPELINE_FAILURE"][:3] + [str(e.event_specific_data)[:3000] for e in result.all_events if e.is_step_failure][:1]
        again = result.dagster_run

    assert again.tags["dagster/partition"] == run_id
    assert len(_calls(log)) == 3  # only the cells without a trace
    materialized = {e.dagster_event.event_specific_data.materialization.partition
                    for e in instance.all_logs(again.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)}
    assert materialized == {run_id}
    assert len(outcome.run_dir.traces.read_text().splitlines()) == 8


def _reexecute_all(instance, parent: dg.DagsterRun, served) -> dg.DagsterRun:
    """What the UI's "Re-execute all" does with ``parent`` in a code location that serves the
    eval file ``served``: its job of the parent's name, the parent's tags; the finished run."""
    with dg.execute_job(served_run_job(served), instance, tags=parent.tags,
                        reexecution_options=dg.ReexecutionOptions(parent_run_id=parent.run_id)) as result:
        return result.dagster_run


def _step_failures(instance, run_id: str) -> list[str]:
    return [e.dagster_event.event_specific_data.error.message.strip()
            for e in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE)]


def test_reexecuting_a_cli_run_of_a_same_named_eval_file_elsewhere_is_refused_and_writes_nothing(
        tmp_path, instance):
    # Jobs and partitions are keyed by the eval's name: the served `toy` has the job of a CLI
    # run of another `toy`, and would run itself into its own runs folder on that partition.
    served = write_eval(tmp_path / "served" / "toy", cases=2)
    elsewhere = write_eval(tmp_path / "elsewhere" / "toy", cases=2)
    spec = load_eval(elsewhere)
    run_id = new_run_id(spec.name)
    outcome = materialize_run(spec, run_id, instance=instance)
    traces = outcome.run_dir.traces.read_text()

    again = _reexecute_all(instance, instance.get_run_by_id(outcome.dagster_run_ids[0]), served)

    assert again.status == dg.DagsterRunStatus.FAILURE
    (failure,) = _step_failures(instance, again.run_id)
    assert "\n" not in failure
    assert failure.startswith(f"dagster._core.definitions.events.Failure: this run belongs to {elsewhere.resolve()} (run folder {outcome.run_dir.path.resolve()}), "
                              f"not to {served.resolve()}")
    assert failure.endswith(f"evalh run {elsewhere.resolve()} --resume {outcome.run_dir.path.resolve()}")
    assert not (served.parent / "runs").exists()  # nothing of the served eval was written
    assert outcome.run_dir.traces.read_text() == traces


def test_reexecuting_a_cli_run_whose_run_folder_is_not_the_served_evals_is_refused(tmp_path, instance):
    # The same eval file, its run in another runs folder (`--resume` of a moved run, another $EVALH_RUNS_DIR).
    path = write_eval(tmp_path / "toy", cases=2)
    spec = load_eval(path)
    moved = replace(spec, runs_root=str(tmp_path / "moved"))  # as `evalh run --resume` of a moved folder
    outcome = materialize_run(moved, new_run_id(spec.name), instance=instance)

    again = _reexecute_all(instance, instance.get_run_by_id(outcome.dagster_run_ids[0]), path)

    assert again.status == dg.DagsterRunStatus.FAILURE
    (failure,) = _step_failures(instance, again.run_id)
    assert f"(run folder {outcome.run_dir.path.resolve()}), not to {path.resolve()}" in failure
    assert not (tmp_path / "toy" / "runs").exists()


def test_reexecuting_a_cli_run_after_its_eval_file_was_edited_runs_the_file_as_it_is_now(
        tmp_path, instance):
    # The eval is its file, not a version of its content: "Re-execute" finishes the run as
    # `evalh run --resume` would, with the eval as it is on disk now.
    path = write_eval(tmp_path / "toy", cases=2)
    spec = load_eval(path)
    outcome = materialize_run(spec, new_run_id(spec.name), instance=instance)
    path.write_text(path.read_text().replace("max_concurrency: 4", "max_concurrency: 2"))

    again = _reexecute_all(instance, instance.get_run_by_id(outcome.dagster_run_ids[0]), path)

    assert again.status == dg.DagsterRunStatus.SUCCESS, _step_failures(instance, again.run_id)
    assert again.tags["dagster/partition"] == outcome.run_dir.path.name


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
