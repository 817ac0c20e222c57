"""Persisted models survive model_dump_json and keep fields written by a newer 1.x writer."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from evalh_pipeline.models import (
    EvalCase,
    EvaluationResult,
    RunSummary,
    ToolCall,
    ToolResult,
    Trace,
    TraceError,
    TraceMessage,
    TraceMetrics,
    TraceOutput,
)

T0 = datetime(2026, 5, 3, 10, 30, 0, 123456, tzinfo=timezone.utc)
T1 = datetime(2026, 5, 3, 10, 30, 2, tzinfo=timezone.utc)


def full_trace() -> Trace:
    call = ToolCall(id="call_1", name="lookup", arguments={"q": "Paris", "n": 2}, started_at=T0)
    return Trace(
        run_id="2026-05-03T10-30-00-000000_demo", case_id="c1", variant_name="main", sample=1,
        started_at=T0, finished_at=T1, latency_ms=1877,
        input={"question": "capital of France?"},
        output=TraceOutput(final_answer="Paris", thinking="It is Paris.", structured={"city": "Paris"}),
        messages=[TraceMessage(role="user", content="capital?"),
                  TraceMessage(role="assistant", tool_call=call, thinking="look it up")],
        tool_calls=[call],
        tool_results=[ToolResult(tool_call_id="call_1", name="lookup", content={"city": "Paris"}),
                      ToolResult(name="lookup", content="plain text")],
        metrics=TraceMetrics(token_input=10, token_output=5, cost_usd=0.001, custom={"k": [1, 2]}),
        error=TraceError(type="timeout", message="took too long", stack="..."),
        extra={"trace_id": "abc"},
    )


def result(**overrides) -> EvaluationResult:
    fields = dict(run_id="r", case_id="c1", variant_name="main", evaluator="mentions",
                  evaluator_type="contains_text", passed=False, score=0.0, reason="missing",
                  detail={"missing": ["Paris"]}, started_at=T0, finished_at=T1, latency_ms=3,
                  error=TraceError(type="exception", message="boom"))
    return EvaluationResult(**{**fields, **overrides})


def test_trace_round_trips_through_json():
    trace = full_trace()
    assert Trace.model_validate_json(trace.model_dump_json()) == trace


def test_trace_json_is_plain_json_with_schema_version():
    data = json.loads(full_trace().model_dump_json())
    assert data["schema_version"] == "1.0"
    assert data["tool_results"][1]["content"] == "plain text"


def test_evaluation_result_round_trips_through_json():
    original = result()
    assert EvaluationResult.model_validate_json(original.model_dump_json()) == original


def test_minimal_trace_fills_defaults():
    trace = Trace(run_id="r", case_id="c", variant_name="v", started_at=T0, finished_at=T1, latency_ms=0)
    assert trace.sample == 0 and trace.error is None and trace.output.final_answer is None
    assert Trace.model_validate_json(trace.model_dump_json()) == trace


def test_trace_from_newer_1x_writer_keeps_unknown_fields():
    data = json.loads(full_trace().model_dump_json())
    data.update(schema_version="1.4", citations=[{"url": "https://x"}], span_id="s1")
    trace = Trace.model_validate(data)
    assert trace.schema_version == "1.4"
    again = json.loads(trace.model_dump_json())
    assert again["citations"] == [{"url": "https://x"}] and again["span_id"] == "s1"


def test_result_from_newer_1x_writer_keeps_unknown_fields():
    data = json.loads(result().model_dump_json())
    data.update(schema_version="1.2", judge_model="m-1")
    assert json.loads(EvaluationResult.model_validate(data).model_dump_json())["judge_model"] == "m-1"


def test_case_keeps_unknown_fields_at_top_level_and_in_expected():
    case = EvalCase.model_validate({"id": "c", "difficulty": "hard", "expected": {"rubric": "be nice"}})
    dumped = json.loads(case.model_dump_json())
    assert dumped["difficulty"] == "hard" and dumped["expected"]["rubric"] == "be nice"


def test_run_summary_keeps_unknown_fields():
    summary = RunSummary.model_validate({
        "schema_version": "1.1", "run_id": "r", "started_at": T0, "finished_at": T1, "config_path": "e.yaml",
        "config_hash": "h", "cases_total": 0, "variants": [], "by_evaluator": [], "new_rollup": {"x": 1},
    })
    assert json.loads(summary.model_dump_json())["new_rollup"] == {"x": 1}
