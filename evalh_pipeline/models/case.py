"""EvalCase and ExpectedBehavior: one dataset row (DataModel.md)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalh_pipeline.models.versioning import SCHEMA_VERSION


class ExpectedBehavior(BaseModel):
    """What a correct run of a case looks like; evaluators compare against it."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    must_call_tools: list[str] = Field(default_factory=list)
    """Tools the system must call (`tool_called` and eval-harness's trajectory checks read it)."""
    answer_should_include: list[str] = Field(default_factory=list)
    """Texts the final answer must contain."""
    answer_should_not_include: list[str] = Field(default_factory=list)
    """Texts the final answer must not contain."""
    facts: dict[str, Any] = Field(default_factory=dict)
    """Expected values by name, for evaluators that compare against them (`exact_match`'s
    `expected_from`, judge prompts).
    """
    must_modify_files: list[str] = Field(default_factory=list)
    """Workspace paths (globs) the system must change (coding agents)."""
    must_not_modify_files: list[str] = Field(default_factory=list)
    """Workspace paths (globs) the system must leave untouched."""


class CaseEvaluator(BaseModel):
    """One evaluator of a single case: the shape of an eval.yaml ``evaluators`` entry.

    config/dataset.py validates it as eval.yaml's entries are (the same config model, the
    same evaluator registry) when the dataset is read; the runner judges that case's cells
    with it besides the eval's evaluators.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    name: str
    """The evaluator's name: never one of the eval's evaluators' names (a results column of its own)."""
    type: str
    """The evaluator type, as in eval.yaml's `evaluators`."""
    config: dict[str, Any] = Field(default_factory=dict)
    """That type's settings."""


class EvalCase(BaseModel):
    """A single test case. The runner never modifies it; ``input`` is opaque to it."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    schema_version: str = SCHEMA_VERSION
    """The case format's version."""
    id: str
    """The case's id, unique in the dataset: cells, results and comparisons are keyed by it."""
    input: dict[str, Any] = Field(default_factory=dict)
    """What the system receives; opaque to the runner."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free data about the case: dataset filters, `run.cluster_by`, the viewer's filter."""
    expected: ExpectedBehavior = Field(default_factory=ExpectedBehavior)
    """What a correct answer looks like, for the evaluators."""
    # Evaluators of this case only, merged with the eval's; required for its pass. Left out of
    # the case's JSON when empty, so snapshots of datasets without them are as they were.
    evaluators: list[CaseEvaluator] = Field(default_factory=list, exclude_if=lambda value: not value)
    """Evaluators of this case only, merged with the eval's; required for its pass."""
    # The variants this case runs on (None: every variant). Its cells on the other variants do
    # not exist by design: no trace, no result, never counted as missing. Left out when None.
    variants: list[str] | None = Field(default=None, min_length=1, exclude_if=lambda value: value is None)
    """The variants this case runs on (unset: every variant). Its cells on the others do not exist:
    never counted as missing.
    """

    def runs_on(self, variant: str) -> bool:
        """Whether the (case, ``variant``) cells exist in a run's plan."""
        return self.variants is None or variant in self.variants
