"""A materialization over several runs (a UI backfill) keeps every run's figures."""

from __future__ import annotations

import dagster as dg

from evalh_pipeline.config import load_eval
from evalh_pipeline.defs.definitions import build_definitions
from tests.conftest import write_eval


def test_a_range_over_two_runs_keeps_each_runs_metadata(tmp_path, instance):
    spec = load_eval(write_eval(tmp_path / "toy", cases=3))
    defs, built = build_definitions([spec])
    instance.add_dynamic_partitions("toy__runs", ["r1", "r2"])
    tags = {"dagster/asset_partition_range_start": "r1|base", "dagster/asset_partition_range_end": "r2|candidate"}

    result = defs.resolve_job_def(built["toy"].cells_job).execute_in_process(instance=instance, tags=tags)

    assert result.success
    for asset in ("cases", "traces", "results"):
        metadata = instance.get_latest_materialization_event(dg.AssetKey(["toy", asset])).asset_materialization.metadata
        assert metadata["runs"].value == ["r1", "r2"], asset
        assert metadata["r1/run_dir"].value != metadata["r2/run_dir"].value
    traces = instance.get_latest_materialization_event(dg.AssetKey(["toy", "traces"])).asset_materialization.metadata
    assert traces["r1/cells_run"].value == traces["r2/cells_run"].value == 6
