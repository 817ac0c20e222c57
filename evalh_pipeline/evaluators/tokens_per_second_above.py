"""``tokens_per_second_above``: streaming throughput (``metrics.tokens_per_second``) is above ``min``."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from evalh_pipeline.evaluators.base import EvaluatorConfigModel, SyncEvaluator, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace


class TokensPerSecondAboveConfig(EvaluatorConfigModel):
    TRACE_FIELDS = ("metrics.tokens_per_second",)
    min: float = Field(gt=0)

    @model_validator(mode="before")
    @classmethod
    def _eval_harness_key(cls, data: Any) -> Any:
        # eval-harness calls the floor `min_tps`.
        if isinstance(data, dict) and "min_tps" in data:
            if "min" in data:
                raise ValueError("give min or min_tps (eval-harness's key), not both")
            data = {k: v for k, v in data.items() if k != "min_tps"} | {"min": data["min_tps"]}
        return data


class TokensPerSecondAbove(SyncEvaluator[TokensPerSecondAboveConfig]):
    """Passes when ``metrics.tokens_per_second > min`` (eval-harness's documented rule).

    The metric is set by streaming adapters; a trace without it fails and says so, since a
    throughput floor cannot be met by a figure that was never measured.
    """

    trace_fields = frozenset({"metrics"})
    reads_case = False

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        floor = self.config.min
        rate = trace.metrics.tokens_per_second
        detail = {"tokens_per_second": rate, "min": floor}
        if rate is None:
            return Verdict(False, "metrics.tokens_per_second is not set: not a streaming trace, or the adapter "
                                  "does not measure throughput", score=0.0, detail=detail)
        if rate > floor:  # eval-harness's docs: "tps > threshold" (its 2.0.2 code passes at equality)
            return Verdict(True, f"{rate:g} tokens/s, above min {floor:g}", score=1.0, detail=detail)
        return Verdict(False, f"{rate:g} tokens/s, not above min {floor:g}", score=0.0, detail=detail)
