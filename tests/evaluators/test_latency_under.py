"""latency_under: the runner-measured latency_ms against max_ms."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.latency_under import LatencyUnder
from evalh_pipeline.models import EvalCase, Trace, TraceError

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trace(latency_ms: int, error: TraceError | None = None) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW,
                 latency_ms=latency_ms, error=error)


def judge(config: dict, the_trace: Trace):
    return asyncio.run(LatencyUnder("fast", "latency_under", config).evaluate(EvalCase(id="c1"), the_trace, None))


def test_passes_under_max_ms_and_fails_at_it_as_eval_harness():
    verdict = judge({"max_ms": 2000}, trace(1500))
    assert verdict.passed and verdict.score == 1.0
    assert verdict.reason == "latency 1500 ms is below max_ms 2000"
    assert verdict.detail == {"latency_ms": 1500, "max_ms": 2000}
    assert not judge({"max_ms": 2000}, trace(2000)).passed  # eval-harness: strict <


def test_fails_over_max_ms_and_says_by_how_much_it_was_allowed():
    verdict = judge({"max_ms": 2000}, trace(2840))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason == "latency 2840 ms is not below max_ms 2000"


def test_a_timed_out_cell_is_judged_on_its_latency_too():
    timeout = TraceError(type="timeout", message="no answer after 120 s")
    assert not judge({"max_ms": 60_000}, trace(120_000, timeout)).passed


def test_fractional_max_ms_is_allowed():
    assert judge({"max_ms": 0.5}, trace(0)).passed


@pytest.mark.parametrize("config", [{}, {"max_ms": 0}, {"max_ms": -1}, {"max_ms": "fast"}, {"max_ms": 5, "p95": True}])
def test_bad_config_is_rejected_by_the_config_model(config):
    with pytest.raises(ValidationError):
        LatencyUnder("fast", "latency_under", config)


def test_non_positive_max_ms_error_says_what_is_allowed():
    with pytest.raises(ValidationError) as info:
        LatencyUnder("fast", "latency_under", {"max_ms": 0})
    (error,) = info.value.errors()
    assert error["loc"] == ("max_ms",) and error["msg"] == "Input should be greater than 0"
