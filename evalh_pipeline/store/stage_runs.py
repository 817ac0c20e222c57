"""The run folder's record of which Dagster run last made each stage (``stage_runs.json``).

The Dagster layer records each stage it materializes, whichever route started the run (the
CLI, the UI, a sensor); the viewer reads the record to link a run back to its Dagster runs.
A missing or unreadable record is no record: a run made before it existed, or an
eval-harness run, simply has no Dagster run to link to.
"""

from __future__ import annotations

from datetime import datetime, timezone

from pydantic import ValidationError

from evalh_pipeline.models.stage_runs import StageRun, StageRuns
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic


def recorded_stage_runs(run_dir: RunDirectory) -> StageRuns:
    """The run's record (empty when it has none, or none that reads as one)."""
    try:
        return StageRuns.model_validate_json(run_dir.stage_runs.read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return StageRuns()


def record_stage_run(run_dir: RunDirectory, stage: str, dagster_run_id: str, job: str,
                     now: datetime | None = None) -> StageRuns:
    """Record that Dagster run ``dagster_run_id`` of ``job`` has just made ``stage``; the record as written.

    Read, update, replace atomically: a run's stages are materialized one at a time (one
    Dagster run per partition at once), so no two writers meet here.
    """
    record = recorded_stage_runs(run_dir)
    record.stages[stage] = StageRun(dagster_run_id=dagster_run_id, job=job, at=now or datetime.now(timezone.utc))
    write_atomic(run_dir.stage_runs, record.model_dump_json(indent=2) + "\n")
    return record
