"""thinking_tokens_under: metrics.token_thinking against max_tokens."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.thinking_tokens_under import ThinkingTokensUnder
from evalh_pipeline.models import EvalCase, Trace, TraceMetrics, TraceOutput

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trace(token_thinking: int | None = None, thinking: str | None = None) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 output=TraceOutput(thinking=thinking), metrics=TraceMetrics(token_thinking=token_thinking))


def judge(config: dict, the_trace: Trace):
    evaluator = ThinkingTokensUnder("brief", "thinking_tokens_under", config)
    return asyncio.run(evaluator.evaluate(EvalCase(id="c1"), the_trace, None))


def test_passes_under_max_tokens_and_fails_at_it_as_eval_harness():
    verdict = judge({"max_tokens": 2048}, trace(1500))
    assert verdict.passed and verdict.score == 1.0
    assert verdict.reason == "1500 thinking tokens, below max_tokens 2048"
    assert verdict.detail == {"token_thinking": 1500, "max_tokens": 2048}
    assert not judge({"max_tokens": 2048}, trace(2048)).passed  # eval-harness: strict <


def test_fails_over_max_tokens():
    verdict = judge({"max_tokens": 1024}, trace(4096))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason == "4096 thinking tokens, not below max_tokens 1024"


def test_missing_count_fails_and_names_the_metric_even_with_thinking_text():
    verdict = judge({"max_tokens": 1024}, trace(None, thinking="some visible reasoning"))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason == "metrics.token_thinking is not set: the system reported no thinking-token count"


def test_max_tokens_one_means_no_thinking_allowed():
    assert judge({"max_tokens": 1}, trace(0)).passed
    assert not judge({"max_tokens": 1}, trace(1)).passed


@pytest.mark.parametrize("config", [{}, {"max_tokens": 0}, {"max_tokens": -1}, {"max_tokens": 10.5}, {"max_tokens": 5, "field": "x"}])
def test_bad_config_is_rejected_by_the_config_model(config):
    with pytest.raises(ValidationError):
        ThinkingTokensUnder("brief", "thinking_tokens_under", config)
