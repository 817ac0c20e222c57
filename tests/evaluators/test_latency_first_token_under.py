"""latency_first_token_under: time to first token of a streamed response against max_ms."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.latency_first_token_under import LatencyFirstTokenUnder
from evalh_pipeline.models import EvalCase, Trace, TraceMetrics

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trace(**metrics) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=5000,
                 metrics=TraceMetrics(**metrics))


def judge(config: dict, the_trace: Trace):
    evaluator = LatencyFirstTokenUnder("ttft", "latency_first_token_under", config)
    return asyncio.run(evaluator.evaluate(EvalCase(id="c1"), the_trace, None))


def test_passes_when_the_first_token_came_in_time():
    verdict = judge({"max_ms": 800}, trace(latency_first_token_ms=350, stream_completed=True))
    assert verdict.passed and verdict.score == 1.0
    assert verdict.reason == "first token after 350 ms, below max_ms 800"
    assert verdict.detail == {"latency_first_token_ms": 350, "max_ms": 800}


def test_fails_when_the_first_token_was_late():
    verdict = judge({"max_ms": 800}, trace(latency_first_token_ms=1200))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason == "first token after 1200 ms, not below max_ms 800"


def test_total_latency_is_not_what_is_judged():
    assert judge({"max_ms": 800}, trace(latency_first_token_ms=100)).passed  # latency_ms is 5000


def test_missing_metric_fails_and_says_the_trace_is_not_streaming():
    verdict = judge({"max_ms": 800}, trace())
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason.startswith("metrics.latency_first_token_ms is not set: not a streaming trace")


@pytest.mark.parametrize("config", [{}, {"max_ms": 0}, {"max_ms": -5}, {"max": 800}])
def test_bad_config_is_rejected_by_the_config_model(config):
    with pytest.raises(ValidationError):
        LatencyFirstTokenUnder("ttft", "latency_first_token_under", config)
