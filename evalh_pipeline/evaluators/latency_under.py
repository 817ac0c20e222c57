"""``latency_under``: the cell's wall-clock latency is below ``max_ms`` (strictly, as in eval-harness)."""

from __future__ import annotations

from pydantic import Field

from evalh_pipeline.evaluators.base import EvaluatorConfigModel, SyncEvaluator, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace


class LatencyUnderConfig(EvaluatorConfigModel):
    max_ms: float = Field(gt=0)
    # eval-harness accepts `field` and always reads trace.latency_ms; so does evalh (see unused_keys).
    field: str | None = None

    def unused_keys(self) -> dict[str, str]:
        if self.field is not None and self.field.removeprefix("$.").removeprefix("trace.") != "latency_ms":
            return {"field": "ignored, as in eval-harness: latency_under always reads the cell's latency_ms"}
        return {}


class LatencyUnder(SyncEvaluator[LatencyUnderConfig]):
    """Passes when ``trace.latency_ms < max_ms`` (eval-harness's rule: equal fails).

    ``latency_ms`` is measured by the runner around the whole call (adapters cannot set it),
    so it is always present, for failed cells too: a timeout shows up as a slow cell.
    """

    trace_fields = frozenset({"latency_ms"})
    reads_case = False

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        max_ms = self.config.max_ms
        detail = {"latency_ms": trace.latency_ms, "max_ms": max_ms}
        if trace.latency_ms < max_ms:
            return Verdict(True, f"latency {trace.latency_ms} ms is below max_ms {max_ms:g}", score=1.0, detail=detail)
        return Verdict(False, f"latency {trace.latency_ms} ms is not below max_ms {max_ms:g}", score=0.0, detail=detail)
