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


class CaseEvaluator(BaseModel):
    """One evaluator of a single case: the shape of an eval.yaml ``evaluators`` entry.

    config/dataset.py validates it as eval.yaml's entries are (the same config model, the
    same evaluator registry) when the dataset is read; the runner judges that case's cells
    with it besides the eval's evaluators.
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    type: str
    config: dict[str, Any] = Field(default_factory=dict)


class EvalCase(BaseModel):
    """A single test case. The runner never modifies it; ``input`` is opaque to it."""

    model_config = ConfigDict(extra="allow")

    schema_version: str = SCHEMA_VERSION
    id: str
    input: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)
    expected: ExpectedBehavior = Field(default_factory=ExpectedBehavior)
    # Evaluators of this case only, merged with the eval's; required for its pass. Left out of
    # the case's JSON when empty, so snapshots of datasets without them are as they were.
    evaluators: list[CaseEvaluator] = Field(default_factory=list, exclude_if=lambda value: not value)
    # The variants this case runs on (None: every variant). Its cells on the other variants do
    # not exist by design: no trace, no result, never counted as missing. Left out when None.
    variants: list[str] | None = Field(default=None, min_length=1, exclude_if=lambda value: value is None)

    def runs_on(self, variant: str) -> bool:
        """Whether the (case, ``variant``) cells exist in a run's plan."""
        return self.variants is None or variant in self.variants
