"""The traces materialization shows artifact counts and bytes for workspace runs only."""

from __future__ import annotations

from pathlib import Path

from evalh_pipeline.defs.evals.metadata import traces_metadata
from evalh_pipeline.runner.traces import TraceStats
from evalh_pipeline.store.run_dir import RunDirectory


def test_workspace_runs_show_artifacts_and_bytes(tmp_path: Path):
    stats = TraceStats(cells_total=2, cells_run=2, artifacts=2, artifact_bytes=4096,
                       workspace={"moved_bytes": 4000, "deleted_bytes": 96, "leaked_bytes": 0})
    metadata = traces_metadata(stats, RunDirectory(tmp_path))
    assert metadata["artifacts"] == 2 and metadata["artifact_bytes"] == 4096
    assert metadata["workspace_bytes"].data["leaked_bytes"] == 0


def test_runs_without_workspace_have_no_artifact_metadata(tmp_path: Path):
    metadata = traces_metadata(TraceStats(cells_total=1, cells_run=1), RunDirectory(tmp_path))
    assert "artifacts" not in metadata and "workspace_bytes" not in metadata
