"""The judge self-consistency measurement of a run (``judge_consistency.jsonl``): one line per
evaluator of ``evalh re-evaluate RUN --repeat-judging K``.

A measurement of the judge, not of the system: results.jsonl (the run's verdicts) is never
changed by it. A cell is one (case, variant, sample); it flips when its K verdicts are not all
equal.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

#: The verdict names a repeat records (``error``: the judge gave no verdict that time).
VERDICTS = ("pass", "fail", "error")


class FlippingCell(BaseModel):
    """A cell whose K verdicts were not all equal, and how many times each verdict came."""

    model_config = ConfigDict(extra="forbid")

    case_id: str
    variant_name: str
    sample: int = 0
    verdicts: dict[str, int]  # "pass" / "fail" -> how many of the K repeats said so


class JudgeConsistency(BaseModel):
    """One evaluator's flip rate over K repeated judgements of each cell.

    ``cells`` counts the cells judged K times with a verdict each time; a cell where some
    repeat could not judge (``errored``) is left out of the rate. A deterministic evaluator
    (no model call) is not repeated: ``skipped`` says why and the counts are 0."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = 1
    evaluator: str
    repeats: int = Field(ge=2)
    cells: int = 0
    flips: int = 0
    flip_rate: float | None = None
    ci_low: float | None = None  # 95 % Wilson interval on flip_rate
    ci_high: float | None = None
    errored: int = 0
    flipping: list[FlippingCell] = Field(default_factory=list)
    skipped: str | None = None
    measured_at: str
