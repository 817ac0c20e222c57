"""RunVariant: one configured way to invoke the system under test."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalh_pipeline.models.versioning import SCHEMA_VERSION


class RunVariant(BaseModel):
    """One row of the variant matrix, built from ``eval.yaml > systems[]``."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    schema_version: str = SCHEMA_VERSION
    """The record format's version (additive within 1.x)."""
    name: str
    """The variant's name (the `systems[]` entry's `name`)."""
    adapter: str
    """How the system is called (the entry's `adapter`)."""
    config: dict[str, Any] = Field(default_factory=dict)
    """The adapter's settings, from the same entry."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free data about the variant (the entry's `metadata`)."""
    timeout_seconds: float = 120.0
    """How long a cell may run before it is stopped and ends `timeout`, in seconds."""
