"""stream_completed: true passes, false (cut off) fails, unset (not streaming) fails."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.stream_completed import StreamCompleted
from evalh_pipeline.models import EvalCase, Trace, TraceMetrics

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trace(**metrics) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 metrics=TraceMetrics(**metrics))


def judge(the_trace: Trace, config: dict | None = None):
    evaluator = StreamCompleted("complete", "stream_completed", config or {})
    return asyncio.run(evaluator.evaluate(EvalCase(id="c1"), the_trace, None))


def test_passes_when_the_stream_completed():
    verdict = judge(trace(stream_completed=True, stream_chunks=57))
    assert verdict.passed and verdict.score == 1.0 and verdict.reason == "the stream completed"
    assert verdict.detail == {"stream_completed": True, "stream_chunks": 57}


def test_fails_when_the_stream_was_cut_off_and_says_after_how_many_chunks():
    verdict = judge(trace(stream_completed=False, stream_chunks=12))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason == "the stream did not complete after 12 chunk(s) (metrics.stream_completed is false)"
    assert judge(trace(stream_completed=False)).reason == \
        "the stream did not complete (metrics.stream_completed is false)"


def test_missing_metric_fails_as_not_a_streaming_trace():
    verdict = judge(trace())
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason == "metrics.stream_completed is not set: not a streaming trace"


def test_config_takes_no_options():
    with pytest.raises(ValidationError):
        StreamCompleted("complete", "stream_completed", {"allow_partial": True})
