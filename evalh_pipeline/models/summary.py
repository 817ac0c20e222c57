"""RunSummary and its parts: the aggregate of one run, regenerable from traces + results."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from evalh_pipeline.models.versioning import SCHEMA_VERSION


class VariantSummary(BaseModel):
    """Per-variant figures of one run."""

    name: str
    cases_total: int
    cases_passed: int
    cases_errored: int
    pass_rate: float
    avg_latency_ms: float
    avg_cost_usd: float | None = None
    avg_tokens_input: float | None = None
    avg_tokens_output: float | None = None
    # With run.samples_per_case > 1 the cases_* figures count cases (a case passes when all
    # of its samples passed) and these count the samples (cells); None with one sample per case.
    samples_total: int | None = None
    samples_passed: int | None = None
    samples_errored: int | None = None


class EvaluatorVariantRollup(BaseModel):
    """One evaluator's figures on one variant."""

    pass_rate: float
    avg_score: float | None = None
    # Results where the evaluator itself failed (a judge unreachable, a command not found):
    # they count as not passed, and are not a verdict on the system.
    errored: int = 0


class EvaluatorRollup(BaseModel):
    """One evaluator's figures on every variant."""

    evaluator: str
    by_variant: dict[str, EvaluatorVariantRollup]


class VariantDelta(BaseModel):
    """How one variant moved against the baseline: positive deltas mean higher than baseline."""

    variant: str
    pass_rate_delta: float
    avg_latency_delta_ms: float
    regressions: list[str] = Field(default_factory=list)
    improvements: list[str] = Field(default_factory=list)


class ComparisonReport(BaseModel):
    """A comparison against a baseline variant (``ad_hoc``) or a promoted baseline run (``drift``)."""

    baseline: str
    deltas: list[VariantDelta]
    kind: Literal["ad_hoc", "drift"] = "ad_hoc"
    baseline_run_id: str | None = None
    regressions_count: int | None = None
    improvements_count: int | None = None


class VariantCompleteness(BaseModel):
    """Cells one variant should have (cases x samples) and the traces it has."""

    expected: int
    present: int


class Completeness(BaseModel):
    """Whether every cell of the run has a trace: counted, never guessed.

    ``expected_cells`` comes from the run's own snapshot (cases.jsonl x the variants in
    run.json x ``run.samples_per_case`` in config.yaml), not from the eval.yaml on disk.
    """

    complete: bool
    expected_cells: int
    present_cells: int
    by_variant: dict[str, VariantCompleteness] = Field(default_factory=dict)

    @property
    def missing_variants(self) -> list[str]:
        """Variants of the run without a single trace."""
        return [name for name, c in self.by_variant.items() if c.expected and not c.present]

    def describe(self) -> str:
        """One line: complete, or which variants are short of how many cells."""
        if self.complete:
            return f"complete: {self.present_cells}/{self.expected_cells} cells have a trace"
        short = ", ".join(f"{name} {c.present}/{c.expected}" for name, c in self.by_variant.items()
                          if c.present < c.expected)
        return (f"incomplete: {self.present_cells}/{self.expected_cells} cells have a trace "
                f"(missing in {short})")


class RunSummary(BaseModel):
    """The aggregate of one run, written as ``summary.yaml``."""

    model_config = ConfigDict(extra="allow")

    schema_version: str = SCHEMA_VERSION
    run_id: str
    started_at: datetime
    finished_at: datetime
    config_path: str
    config_hash: str

    cases_total: int
    variants: list[VariantSummary]
    by_evaluator: list[EvaluatorRollup]
    comparison: ComparisonReport | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    # Runs with a workspace: bytes copied/moved/deleted/leaked and a mismatch message (if gross).
    workspace: dict[str, Any] | None = None
    # Expected cells (from the run's snapshot) against traces present; None for old summaries.
    completeness: Completeness | None = None
