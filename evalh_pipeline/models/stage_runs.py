"""Which orchestrator run last made each stage of an eval run: the contract of ``stage_runs.json``."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

STAGE_RUNS_SCHEMA_VERSION: Literal["1"] = "1"


class StageRun(BaseModel):
    """The Dagster run that last materialized one stage, and its job (``<eval>__run``, ``<eval>__judge``, …)."""

    model_config = ConfigDict(extra="forbid")

    dagster_run_id: str
    job: str
    at: datetime


class StageRuns(BaseModel):
    """A run folder's ``stage_runs.json`` (store/stage_runs.py): per stage, the Dagster run that last made it.

    Written by the Dagster layer through the store, read by the viewer to link a run's pages
    back to the Dagster runs that made it: the viewer never asks the Dagster instance.
    """

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["1"] = STAGE_RUNS_SCHEMA_VERSION
    stages: dict[str, StageRun] = Field(default_factory=dict)
