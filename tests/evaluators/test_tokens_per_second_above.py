"""tokens_per_second_above: streaming throughput against a floor."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.tokens_per_second_above import TokensPerSecondAbove
from evalh_pipeline.models import EvalCase, Trace, TraceMetrics

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trace(**metrics) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 metrics=TraceMetrics(**metrics))


def judge(config: dict, the_trace: Trace):
    evaluator = TokensPerSecondAbove("throughput", "tokens_per_second_above", config)
    return asyncio.run(evaluator.evaluate(EvalCase(id="c1"), the_trace, None))


def test_passes_above_min_and_fails_at_it_as_eval_harness_documents():
    verdict = judge({"min": 20}, trace(tokens_per_second=42.5))
    assert verdict.passed and verdict.score == 1.0
    assert verdict.reason == "42.5 tokens/s, above min 20"
    assert verdict.detail == {"tokens_per_second": 42.5, "min": 20}
    assert not judge({"min": 20}, trace(tokens_per_second=20.0)).passed  # eval-harness docs: tps > threshold


def test_fails_below_min():
    verdict = judge({"min": 20}, trace(tokens_per_second=12.25))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason == "12.25 tokens/s, not above min 20"


def test_missing_metric_fails_and_names_it():
    verdict = judge({"min": 20}, trace(token_output=100))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason.startswith("metrics.tokens_per_second is not set: not a streaming trace")


@pytest.mark.parametrize("config", [{}, {"min": 0}, {"min": -1}, {"min": "fast"}, {"min_tps": 0}, {"min": 5, "min_tps": 5}])
def test_bad_config_is_rejected_by_the_config_model(config):
    with pytest.raises(ValidationError):
        TokensPerSecondAbove("throughput", "tokens_per_second_above", config)


def test_eval_harness_min_tps_is_the_floor():
    evaluator = TokensPerSecondAbove("throughput", "tokens_per_second_above", {"min_tps": 20})
    assert evaluator.config.min == 20
