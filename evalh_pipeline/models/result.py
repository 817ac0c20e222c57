"""EvaluationResult: one judgement by one evaluator on one trace."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalh_pipeline.models.trace import TraceError
from evalh_pipeline.models.versioning import SCHEMA_VERSION


class EvaluationResult(BaseModel):
    """The single result shape every evaluator produces, so rollups never branch on type."""

    model_config = ConfigDict(extra="allow")

    schema_version: str = SCHEMA_VERSION
    run_id: str
    case_id: str
    variant_name: str
    sample: int = 0
    evaluator: str
    evaluator_type: str
    passed: bool
    score: float | None = None
    reason: str
    detail: dict[str, Any] = Field(default_factory=dict)
    started_at: datetime
    finished_at: datetime
    latency_ms: int
    error: TraceError | None = None
