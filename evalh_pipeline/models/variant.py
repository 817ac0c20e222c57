"""RunVariant: one configured way to invoke the system under test."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from evalh_pipeline.models.versioning import SCHEMA_VERSION


class RunVariant(BaseModel):
    """One row of the variant matrix, built from ``eval.yaml > systems[]``."""

    schema_version: str = SCHEMA_VERSION
    name: str
    adapter: str
    config: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    timeout_seconds: float = 120.0
