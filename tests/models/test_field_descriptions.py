"""Every key of the records a run folder holds says what it means: the run-directory reference
(docs/reference/run-directory.md) renders these descriptions from the models' JSON Schemas."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from evalh_pipeline.models import (
    EvalCase,
    EvaluationResult,
    FilesystemArtifact,
    HumanLabel,
    RunSummary,
    RunVariant,
    Trace,
)

RECORDS = [EvalCase, Trace, EvaluationResult, RunSummary, FilesystemArtifact, HumanLabel, RunVariant]


def _undescribed(schema: dict[str, Any]) -> list[str]:
    """``Model.key`` for each property of the schema and its nested models without a description."""
    objects = {schema.get("title", "<root>"): schema, **schema.get("$defs", {})}
    return [f"{name}.{key}" for name, body in objects.items()
            for key, prop in body.get("properties", {}).items() if not prop.get("description")]


@pytest.mark.parametrize("model", RECORDS, ids=lambda m: m.__name__)
def test_every_key_of_a_run_folder_record_has_a_description(model: type[BaseModel]):
    assert _undescribed(model.model_json_schema()) == []
