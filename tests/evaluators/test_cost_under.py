"""cost_under: metrics.cost_usd against max_usd; a trace without a cost fails."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.cost_under import CostUnder
from evalh_pipeline.models import EvalCase, Trace, TraceMetrics

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trace(**metrics) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 metrics=TraceMetrics(**metrics))


def judge(config: dict, the_trace: Trace):
    return asyncio.run(CostUnder("cheap", "cost_under", config).evaluate(EvalCase(id="c1"), the_trace, None))


def test_passes_under_max_usd_and_fails_at_it_as_eval_harness():
    verdict = judge({"max_usd": 0.05}, trace(cost_usd=0.012))
    assert verdict.passed and verdict.score == 1.0
    assert verdict.reason == "cost $0.012 is below max_usd $0.05"
    assert verdict.detail == {"cost_usd": 0.012, "max_usd": 0.05}
    assert not judge({"max_usd": 0.05}, trace(cost_usd=0.05)).passed  # eval-harness: strict <


def test_fails_over_max_usd():
    verdict = judge({"max_usd": 0.01}, trace(cost_usd=0.012))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason == "cost $0.012 is not below max_usd $0.01"


def test_thinking_cost_is_part_of_the_total_not_added_to_it():
    # cost_thinking_usd is a sub-field of cost_usd (DataModel.md), never summed on top.
    assert judge({"max_usd": 0.02}, trace(cost_usd=0.015, cost_thinking_usd=0.01)).passed


def test_missing_cost_fails_and_says_the_system_reported_none():
    verdict = judge({"max_usd": 1.0}, trace(token_input=10))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason.startswith("metrics.cost_usd is not set: the system reported no cost")
    assert verdict.detail["cost_usd"] is None


@pytest.mark.parametrize("config", [{}, {"max_usd": 0}, {"max_usd": -0.01}, {"max_usd": "cheap"}, {"max_usd": 1, "currency": "EUR"}])
def test_bad_config_is_rejected_by_the_config_model(config):
    with pytest.raises(ValidationError):
        CostUnder("cheap", "cost_under", config)
