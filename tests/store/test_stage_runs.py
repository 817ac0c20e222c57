"""stage_runs.json: which Dagster run last made each stage of a run (the viewer's links back to Dagster)."""

from __future__ import annotations

from datetime import datetime, timezone

from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.store.stage_runs import record_stage_run, recorded_stage_runs

AT = datetime(2026, 11, 29, 1, 0, tzinfo=timezone.utc)


def test_each_stage_keeps_the_dagster_run_that_made_it_last(tmp_path):
    run_dir = RunDirectory(tmp_path / "r1")
    run_dir.path.mkdir()
    for stage in ("cases", "traces", "results"):
        record_stage_run(run_dir, stage, "first", "toy__run", now=AT)
    record_stage_run(run_dir, "results", "again", "toy__judge", now=AT)  # a re-judge

    stages = recorded_stage_runs(run_dir).stages
    assert {stage: (s.dagster_run_id, s.job) for stage, s in stages.items()} == {
        "cases": ("first", "toy__run"), "traces": ("first", "toy__run"), "results": ("again", "toy__judge")}
    assert stages["cases"].at == AT


def test_a_run_without_a_readable_record_has_none(tmp_path):
    run_dir = RunDirectory(tmp_path / "r1")
    run_dir.path.mkdir()
    assert recorded_stage_runs(run_dir).stages == {}  # made before the record existed
    run_dir.stage_runs.write_text("{not json")
    assert recorded_stage_runs(run_dir).stages == {}
    record_stage_run(run_dir, "cases", "d1", "toy__run", now=AT)  # a bad record is replaced, not kept
    assert set(recorded_stage_runs(run_dir).stages) == {"cases"}
