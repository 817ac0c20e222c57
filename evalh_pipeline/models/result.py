"""EvaluationResult: one judgement by one evaluator on one trace."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from evalh_pipeline.models.trace import CellRecord, TraceError

# The ``error.type`` of a result whose evaluator could not judge (DataModel.md: an errored
# result): its judge was unreachable (refused, timed out, HTTP 5xx after the retry), gave no
# usable reply, or stayed rate limited. Such a result is no verdict on the system: pass
# counts, paired statistics and regressions leave its cell out and say how many, and
# re-judging (no system call) finishes it. Any other errored result counts as failed.
NOT_JUDGED_ERRORS = {
    "judge_unreachable": "the judge was unreachable",
    "judge_error": "the judge gave no usable answer",
    "rate_limited": "the judge stayed rate limited",
}


class EvaluationResult(CellRecord):
    """The single result shape every evaluator produces, so rollups never branch on type.

    ``evaluator_hash`` (runner/hashes.py) is the hash of the evaluator's config when it
    judged, and ``trace_hash`` the hash of the trace line it judged (models/trace.py): a
    result is current only while both still match (None: unknown, re-judged).
    """

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
    evaluator_hash: str | None = None
    trace_hash: str | None = None
