"""``thinking_tokens_under``: thinking tokens (``metrics.token_thinking``) are below ``max_tokens`` (strictly, as in eval-harness)."""

from __future__ import annotations

from pydantic import Field

from evalh_pipeline.evaluators.base import EvaluatorConfigModel, SyncEvaluator, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace


class ThinkingTokensUnderConfig(EvaluatorConfigModel):
    TRACE_FIELDS = ("metrics.token_thinking",)
    max_tokens: int = Field(ge=1)  # the check is strict (tokens < max_tokens), so 0 could never pass


class ThinkingTokensUnder(SyncEvaluator[ThinkingTokensUnderConfig]):
    """Passes when ``metrics.token_thinking < max_tokens`` (eval-harness's rule: equal fails).

    Providers bill thinking tokens separately, so this bounds reasoning spend per case. The
    count is what the provider reports (the text may be hidden); when it is unset the check
    fails and says so instead of assuming no thinking happened.
    """

    trace_fields = frozenset({"metrics"})
    reads_case = False

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        limit = self.config.max_tokens
        tokens = trace.metrics.token_thinking
        detail = {"token_thinking": tokens, "max_tokens": limit}
        if tokens is None:
            return Verdict(False, "metrics.token_thinking is not set: the system reported no thinking-token count",
                           score=0.0, detail=detail)
        if tokens < limit:
            return Verdict(True, f"{tokens} thinking tokens, below max_tokens {limit}", score=1.0, detail=detail)
        return Verdict(False, f"{tokens} thinking tokens, not below max_tokens {limit}", score=0.0, detail=detail)
