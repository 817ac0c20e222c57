"""Evaluators that declare the trace fields they read (Evaluator.trace_fields) give the same
verdict on a trace decoded with only those fields (plus the cell's identity and error) as on
the whole trace; re-evaluation decodes projections for them (runner/evaluation.py)."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from evalh_pipeline.evaluators.registry import EVALUATORS
from evalh_pipeline.models import EvalCase, Trace, TraceError
from evalh_pipeline.runner.evaluation import NO_CASE, trace_decoder
from evalh_pipeline.store.records import TRACES

T0 = datetime(2026, 1, 2, tzinfo=timezone.utc)
# A config for every evaluator type that declares its trace fields (the guard below keeps it so).
CONFIGS = {
    "latency_under": {"max_ms": 100},
    "cost_under": {"max_usd": 0.01},
    "stream_completed": {},
    "thinking_tokens_under": {"max_tokens": 50},
    "tokens_per_second_above": {"min": 20},
    "latency_first_token_under": {"max_ms": 300},
    "tool_called": {"tool_name": "lookup", "must_succeed": True},
}
TRACES_SEEN = [
    Trace(run_id="r", case_id="c1", variant_name="v", started_at=T0, finished_at=T0, latency_ms=40),
    Trace(run_id="r", case_id="c1", variant_name="v", sample=2, started_at=T0, finished_at=T0, latency_ms=400,
          output={"final_answer": "Paris", "thinking": "hmm"},
          tool_calls=[{"id": "t1", "name": "lookup", "arguments": {"q": "x"}}],
          tool_results=[{"tool_call_id": "t1", "name": "lookup", "content": {"error": "boom"}}],
          metrics={"cost_usd": 0.02, "token_thinking": 80, "tokens_per_second": 35.0, "stream_completed": True,
                   "stream_chunks": 9, "latency_first_token_ms": 120}),
    Trace(run_id="r", case_id="c1", variant_name="v", started_at=T0, finished_at=T0, latency_ms=5,
          tool_calls=[{"name": "lookup", "arguments": {}}], metrics={"cost_usd": 0.001, "stream_completed": False},
          error=TraceError(type="timeout", message="slow")),
]


# Evaluators that declare the fields of the path in their config (a dotted path into a Trace field).
BY_PATH = {
    "contains_text": {"any_of": ["Paris"]},
    "regex_match": {"pattern": "P.r", "field": "output.final_answer"},
    "exact_match": {"field": "tool_calls[0].name", "expected": "lookup"},
    "exact_match ": {"field": "output.final_answer", "expected_from": "city"},
    "fuzzy_match": {"any_of": ["paris"]},
}


def _declaring() -> list[str]:
    return [name for name in EVALUATORS.names() if EVALUATORS.get(name).trace_fields is not None]


def test_every_evaluator_declaring_its_fields_is_checked_here():
    assert sorted(_declaring()) == sorted(CONFIGS)


@pytest.mark.parametrize("type_name", sorted(CONFIGS) + sorted(BY_PATH))
@pytest.mark.parametrize("trace", TRACES_SEEN, ids=["bare", "full", "errored"])
def test_a_declared_evaluator_judges_a_projection_as_the_whole_trace(type_name, trace, tmp_path: Path):
    config = CONFIGS[type_name] if type_name in CONFIGS else BY_PATH[type_name]
    evaluator = EVALUATORS.get(type_name.strip())("e", type_name.strip(), config)
    decode = trace_decoder([evaluator])
    assert decode != TRACES.decode
    line = TRACES.encode(trace)
    projected = decode(line, tmp_path / "traces.jsonl", 1)
    case = EvalCase(id="c1", input={}, expected={"must_call_tools": ["lookup"], "answer_should_include": ["Par"],
                                                  "facts": {"city": "Paris"}})
    judged_case = case if evaluator.reads_case else NO_CASE
    assert evaluator.evaluate_sync(judged_case, projected, None) == evaluator.evaluate_sync(case, trace, None)


def test_one_evaluator_without_a_declaration_makes_the_pass_decode_whole_traces():
    declared = EVALUATORS.get("latency_under")("fast", "latency_under", {"max_ms": 10})
    undeclared = EVALUATORS.get("contains_text")("says", "contains_text", {"any_of": ["Paris"], "field": "$..final_answer"})
    assert trace_decoder([declared, undeclared]) == TRACES.decode


@pytest.mark.parametrize("field", ["$..name", "tool_calls[*].name", "custom_key.value"])
def test_a_path_that_may_read_anything_declares_nothing(field):
    # A JSONPath, or a key that is not a Trace field (an extra key of the record): whole traces.
    evaluator = EVALUATORS.get("regex_match")("e", "regex_match", {"pattern": "x", "field": field})
    assert evaluator.trace_fields is None and trace_decoder([evaluator]) == TRACES.decode
