"""``cost_under``: the cell's billed cost (``metrics.cost_usd``) is below ``max_usd`` (strictly, as in eval-harness)."""

from __future__ import annotations

from pydantic import Field

from evalh_pipeline.evaluators.base import EvaluatorConfigModel, SyncEvaluator, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace


class CostUnderConfig(EvaluatorConfigModel):
    TRACE_FIELDS = ("metrics.cost_usd",)
    max_usd: float = Field(gt=0)  # the check is strict (cost < max_usd), so 0 could never pass


class CostUnder(SyncEvaluator[CostUnderConfig]):
    """Passes when ``metrics.cost_usd < max_usd`` (eval-harness's rule: equal fails).

    ``cost_usd`` is the total billed cost, thinking tokens included. A trace without a cost
    fails rather than passing as free: a budget check that cannot see the bill proves nothing.
    """

    trace_fields = frozenset({"metrics"})
    reads_case = False

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        max_usd = self.config.max_usd
        cost = trace.metrics.cost_usd
        detail = {"cost_usd": cost, "max_usd": max_usd}
        if cost is None:
            return Verdict(False, "metrics.cost_usd is not set: the system reported no cost, so the budget "
                                  "cannot be checked (have the adapter return metrics.cost_usd)", score=0.0, detail=detail)
        if cost < max_usd:
            return Verdict(True, f"cost ${cost:g} is below max_usd ${max_usd:g}", score=1.0, detail=detail)
        return Verdict(False, f"cost ${cost:g} is not below max_usd ${max_usd:g}", score=0.0, detail=detail)
