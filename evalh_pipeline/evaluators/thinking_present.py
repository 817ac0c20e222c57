"""``thinking_present``: the system surfaced its reasoning (``output.thinking``)."""

from __future__ import annotations

from pydantic import Field

from evalh_pipeline.evaluators.base import EvaluatorConfigModel, SyncEvaluator, Verdict
from evalh_pipeline.models import EvalCase, FilesystemArtifact, Trace


class ThinkingPresentConfig(EvaluatorConfigModel):
    TRACE_FIELDS = ("output.thinking",)

    min_chars: int = Field(default=1, ge=1)
    allow_token_count_only: bool = False

    def trace_fields_read(self) -> tuple[str, ...]:
        return (*self.TRACE_FIELDS, *(["metrics.token_thinking"] if self.allow_token_count_only else []))


class ThinkingPresent(SyncEvaluator[ThinkingPresentConfig]):
    """Passes when ``output.thinking`` has at least ``min_chars`` characters
    (whitespace included: eval-harness passes any non-empty string).

    Some providers (OpenAI o-series) bill reasoning but hide its text: the trace then has no
    ``output.thinking`` and only ``metrics.token_thinking``. With ``allow_token_count_only:
    true`` a positive count is accepted when the text is absent; when text is present it is
    what gets judged, so a too-short thinking text still fails.
    """

    def evaluate_sync(self, case: EvalCase, trace: Trace, artifact: FilesystemArtifact | None) -> Verdict:
        cfg = self.config
        # Whitespace counts, as in eval-harness (its rule: a non-empty string).
        text = trace.output.thinking or ""
        tokens = trace.metrics.token_thinking
        detail = {"thinking_chars": len(text), "min_chars": cfg.min_chars, "token_thinking": tokens,
                  "accepted_token_count_only": False}
        if text:
            if len(text) >= cfg.min_chars:
                return Verdict(True, f"output.thinking has {len(text)} chars", score=1.0, detail=detail)
            return Verdict(False, f"output.thinking has {len(text)} chars, fewer than min_chars {cfg.min_chars}",
                           score=0.0, detail=detail)
        if tokens is not None and tokens > 0:
            if cfg.allow_token_count_only:
                detail["accepted_token_count_only"] = True
                return Verdict(True, f"no thinking text, but metrics.token_thinking is {tokens} "
                                     "(the provider hides the text)", score=1.0, detail=detail)
            return Verdict(False, f"output.thinking is empty, though metrics.token_thinking is {tokens}: the provider "
                                  "may hide the text (set allow_token_count_only: true to accept the count)",
                           score=0.0, detail=detail)
        shown = "not set" if tokens is None else str(tokens)
        return Verdict(False, f"output.thinking is empty and metrics.token_thinking is {shown}: "
                              "the system surfaced no thinking", score=0.0, detail=detail)
