"""Every stage the Dagster layer materializes records its Dagster run in the run folder (stage_runs.json),
so the viewer links a run back to the Dagster runs that made it without asking the instance."""

from __future__ import annotations

from evalh_pipeline.common.settings import Settings
from evalh_pipeline.defs.launch import materialize_reevaluation, materialize_run
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.store.run_dir import new_run_id
from evalh_pipeline.store.stage_runs import recorded_stage_runs
from tests.support.evals import write_eval


def test_a_run_records_its_dagster_run_and_a_rejudge_its_own_for_the_stages_it_made(tmp_path, instance):
    spec = load_eval(write_eval(tmp_path / "toy", cases=1), settings=Settings.from_environment({}))
    run_id = new_run_id(spec.name)

    made = materialize_run(spec, run_id, instance=instance)
    (first,) = made.dagster_run_ids
    stages = recorded_stage_runs(made.run_dir).stages
    assert {stage: (s.dagster_run_id, s.job) for stage, s in stages.items()} == {
        stage: (first, "toy__run") for stage in ("cases", "traces", "results", "summary", "drift")}
    assert instance.get_run_by_id(first).tags["dagster/partition"] == run_id

    (judged,) = materialize_reevaluation(spec, run_id, instance=instance).dagster_run_ids
    stages = recorded_stage_runs(made.run_dir).stages
    assert {stage: s.dagster_run_id for stage, s in stages.items()} == {
        "cases": first, "traces": first, "results": judged, "summary": judged, "drift": judged}
    assert stages["summary"].job == "toy__judge"
