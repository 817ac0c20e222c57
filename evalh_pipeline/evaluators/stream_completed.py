"""``stream_completed``: a streamed response ran to its end (``metrics.stream_completed``)."""

from __future__ import annotations

from evalh_pipeline.evaluators.base import EvaluatorConfigModel, SyncEvaluator, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace


class StreamCompletedConfig(EvaluatorConfigModel):
    """No options."""

    TRACE_FIELDS = ("metrics.stream_completed",)


class StreamCompleted(SyncEvaluator[StreamCompletedConfig]):
    """Passes when ``metrics.stream_completed`` is true.

    A stream that was cut off (dropped connection, timeout mid-stream) can still leave a
    plausible partial ``final_answer``; this check catches that. Unset means the adapter did
    not stream, which fails too: the evaluator was asked about a stream that does not exist.
    """

    trace_fields = frozenset({"metrics"})
    reads_case = False

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        completed = trace.metrics.stream_completed
        detail = {"stream_completed": completed, "stream_chunks": trace.metrics.stream_chunks}
        if completed is None:
            return Verdict(False, "metrics.stream_completed is not set: not a streaming trace", score=0.0, detail=detail)
        if completed:
            return Verdict(True, "the stream completed", score=1.0, detail=detail)
        chunks = trace.metrics.stream_chunks
        after = f" after {chunks} chunk(s)" if chunks is not None else ""
        return Verdict(False, f"the stream did not complete{after} (metrics.stream_completed is false)",
                       score=0.0, detail=detail)
