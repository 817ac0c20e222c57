"""``tokens_per_second_above``: streaming throughput (``metrics.tokens_per_second``) is at least ``min``."""

from __future__ import annotations

from pydantic import Field

from evalh_pipeline.evaluators.base import EvaluatorConfigModel, SyncEvaluator, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace


class TokensPerSecondAboveConfig(EvaluatorConfigModel):
    min: float = Field(gt=0)


class TokensPerSecondAbove(SyncEvaluator):
    """Passes when ``metrics.tokens_per_second >= min``.

    The metric is set by streaming adapters; a trace without it fails and says so, since a
    throughput floor cannot be met by a figure that was never measured.
    """

    Config = TokensPerSecondAboveConfig

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        floor = self.config.min
        rate = trace.metrics.tokens_per_second
        detail = {"tokens_per_second": rate, "min": floor}
        if rate is None:
            return Verdict(False, "metrics.tokens_per_second is not set: not a streaming trace, or the adapter "
                                  "does not measure throughput", score=0.0, detail=detail)
        if rate >= floor:
            return Verdict(True, f"{rate:g} tokens/s, at least min {floor:g}", score=1.0, detail=detail)
        return Verdict(False, f"{rate:g} tokens/s, below min {floor:g}", score=0.0, detail=detail)
