"""EvalCase and ExpectedBehavior: one dataset row (DataModel.md)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalh_pipeline.models.versioning import SCHEMA_VERSION


class ExpectedBehavior(BaseModel):
    """What a correct run of a case looks like; evaluators compare against it."""

    model_config = ConfigDict(extra="allow")

    must_call_tools: list[str] = Field(default_factory=list)
    answer_should_include: list[str] = Field(default_factory=list)
    answer_should_not_include: list[str] = Field(default_factory=list)
    facts: dict[str, Any] = Field(default_factory=dict)
    must_modify_files: list[str] = Field(default_factory=list)
    must_not_modify_files: list[str] = Field(default_factory=list)


class EvalCase(BaseModel):
    """A single test case. The runner never modifies it; ``input`` is opaque to it."""

    model_config = ConfigDict(extra="allow")

    schema_version: str = SCHEMA_VERSION
    id: str
    input: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    expected: ExpectedBehavior = Field(default_factory=ExpectedBehavior)
