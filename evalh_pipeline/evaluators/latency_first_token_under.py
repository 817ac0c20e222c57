"""``latency_first_token_under``: time to first token (``metrics.latency_first_token_ms``) is below ``max_ms`` (strictly, as in eval-harness)."""

from __future__ import annotations

from pydantic import Field

from evalh_pipeline.evaluators.base import EvaluatorConfigModel, SyncEvaluator, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace


class LatencyFirstTokenUnderConfig(EvaluatorConfigModel):
    TRACE_FIELDS = ("metrics.latency_first_token_ms",)
    max_ms: float = Field(gt=0)


class LatencyFirstTokenUnder(SyncEvaluator[LatencyFirstTokenUnderConfig]):
    """Passes when ``metrics.latency_first_token_ms < max_ms`` (eval-harness's rule: equal fails).

    Only streaming adapters measure the first token; on a non-streaming trace the metric is
    unset and the check fails saying so, rather than passing a latency nobody measured.
    """

    trace_fields = frozenset({"metrics"})
    reads_case = False

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        max_ms = self.config.max_ms
        first = trace.metrics.latency_first_token_ms
        detail = {"latency_first_token_ms": first, "max_ms": max_ms}
        if first is None:
            return Verdict(False, "metrics.latency_first_token_ms is not set: not a streaming trace "
                                  "(only streaming adapters report time to first token)", score=0.0, detail=detail)
        if first < max_ms:
            return Verdict(True, f"first token after {first} ms, below max_ms {max_ms:g}", score=1.0, detail=detail)
        return Verdict(False, f"first token after {first} ms, not below max_ms {max_ms:g}", score=0.0, detail=detail)
