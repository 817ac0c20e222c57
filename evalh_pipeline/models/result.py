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
    """The evaluator's name (eval.yaml's `evaluators[].name` or a case's own)."""
    evaluator_type: str
    """The evaluator's type."""
    passed: bool
    """The verdict."""
    score: float | None = None
    """A graded score, for evaluators that give one (similarity, a judge's scale)."""
    reason: str
    """Why, in words (a judge's explanation, the text that matched or was missing)."""
    detail: dict[str, Any] = Field(default_factory=dict)
    """The evaluator's own data (what it compared, a judge's raw answer)."""
    started_at: datetime
    """When judging started."""
    finished_at: datetime
    """When judging finished."""
    latency_ms: int
    """How long judging took, in milliseconds."""
    error: TraceError | None = None
    """Why the evaluator could not judge: `judge_unreachable`, `judge_error` and `rate_limited` are no
    verdict (left out of pass counts and re-judged later); any other counts as failed.
    """
    evaluator_hash: str | None = None
    """The hash of the evaluator's config when it judged: the result is re-judged once that changes.
    """
    trace_hash: str | None = None
    """The `trace_hash` of the trace it judged: the result is current only while the trace still has
    it.
    """
