"""tool_called: which tools, how often, whether they succeeded, with which arguments."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.tool_called import ToolCalled
from evalh_pipeline.models import EvalCase, ToolCall, ToolResult, Trace

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trace(*calls: ToolCall, results: list[ToolResult] | None = None) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 tool_calls=list(calls), tool_results=results or [])


def call(name: str, call_id: str | None = None, **arguments) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def judge(config: dict, the_trace: Trace, the_case: EvalCase | None = None):
    evaluator = ToolCalled("used_tool", "tool_called", config)
    return asyncio.run(evaluator.evaluate(the_case or EvalCase(id="c1"), the_trace, None))


def test_passes_when_the_named_tool_was_called():
    verdict = judge({"tool_name": "lookup"}, trace(call("lookup", q="x")))
    assert verdict.passed and verdict.detail["counts"] == {"lookup": 1}


def test_fails_when_the_named_tool_was_not_called():
    verdict = judge({"tool_name": "lookup"}, trace(call("search")))
    assert not verdict.passed and "lookup: called 0 time(s), fewer than min_calls 1" in verdict.reason


def test_without_tool_name_each_expected_must_call_tool_is_checked():
    the_case = EvalCase(id="c1", expected={"must_call_tools": ["search", "fetch"]})
    verdict = judge({}, trace(call("search")), the_case)
    assert not verdict.passed and "fetch" in verdict.reason and "search:" not in verdict.reason
    assert verdict.detail["tools"] == ["search", "fetch"]
    assert judge({}, trace(call("search"), call("fetch")), the_case).passed


def test_tool_name_overrides_expected_must_call_tools():
    the_case = EvalCase(id="c1", expected={"must_call_tools": ["fetch"]})
    assert judge({"tool_name": "search"}, trace(call("search")), the_case).passed


def test_no_tool_name_and_no_expected_tools_passes():
    verdict = judge({}, trace())
    assert verdict.passed and "no tool expected" in verdict.reason


def test_min_calls_requires_enough_calls():
    assert not judge({"tool_name": "t", "min_calls": 2}, trace(call("t"))).passed
    assert judge({"tool_name": "t", "min_calls": 2}, trace(call("t"), call("t"))).passed


def test_max_calls_rejects_too_many_calls():
    verdict = judge({"tool_name": "t", "max_calls": 1}, trace(call("t"), call("t")))
    assert not verdict.passed and "more than max_calls 1" in verdict.reason
    assert judge({"tool_name": "t", "max_calls": 2}, trace(call("t"), call("t"))).passed


def test_must_appear_false_fails_when_the_tool_was_called():
    verdict = judge({"tool_name": "delete", "must_appear": False}, trace(call("delete")))
    assert not verdict.passed and "must not be called" in verdict.reason
    assert judge({"tool_name": "delete", "must_appear": False}, trace(call("read"))).passed


def test_must_succeed_fails_when_a_tool_result_reports_an_error():
    failing = trace(call("lookup", "c1"), results=[ToolResult(tool_call_id="c1", name="lookup",
                                                               content={"error": "rate limited"})])
    verdict = judge({"tool_name": "lookup"}, failing)
    assert not verdict.passed and "tool returned an error for ['c1']" in verdict.reason
    assert judge({"tool_name": "lookup", "must_succeed": False}, failing).passed


def test_must_succeed_recognises_is_error_results_without_call_ids():
    failing = trace(call("lookup"), results=[ToolResult(name="lookup", content={"is_error": True})])
    assert not judge({"tool_name": "lookup"}, failing).passed


def test_must_succeed_ignores_errors_of_other_calls_and_text_results():
    the_trace = trace(
        call("lookup", "ok_call"),
        results=[ToolResult(tool_call_id="other", name="lookup", content={"error": "x"}),
                 ToolResult(tool_call_id="ok_call", name="lookup", content="error: looks bad but is text")],
    )
    assert judge({"tool_name": "lookup"}, the_trace).passed


def test_args_match_renders_case_templates():
    the_case = EvalCase(id="c1", input={"city": "Paris", "n": 3})
    config = {"tool_name": "weather", "args_match": {"city": "{{ case.input.city }}", "days": "{{case.input.n}}",
                                                      "q": "weather in {{ case.input.city }}"}}
    verdict = judge(config, trace(call("weather", city="Paris", days=3, q="weather in Paris", extra=1)), the_case)
    assert verdict.passed
    assert verdict.detail["args_match"] == {"city": "Paris", "days": 3, "q": "weather in Paris"}
    assert not judge(config, trace(call("weather", city="Rome", days=3, q="weather in Paris")), the_case).passed


def test_args_match_regex_values_use_search():
    config = {"tool_name": "search", "args_match": {"q": "~=^par(is)?\\b"}}
    assert judge(config, trace(call("search", q="paris hotels"))).passed
    assert not judge(config, trace(call("search", q="rome hotels"))).passed


def test_args_match_nested_dicts_match_partially():
    config = {"tool_name": "find", "args_match": {"filters": {"city": "Paris"}}}
    assert judge(config, trace(call("find", filters={"city": "Paris", "max": 3}, page=1))).passed
    assert not judge(config, trace(call("find", filters={"city": "Rome"}))).passed
    assert not judge(config, trace(call("find", filters="Paris"))).passed


def test_args_match_counts_only_matching_calls():
    config = {"tool_name": "t", "args_match": {"x": 1}, "max_calls": 1}
    verdict = judge(config, trace(call("t", x=1), call("t", x=2), call("t", x=2)))
    assert verdict.passed and verdict.detail["counts"] == {"t": 1}


@pytest.mark.parametrize("config", [{"min_calls": 3, "max_calls": 2}, {"tool": "x"}, {"must_appear": "sometimes"}])
def test_bad_config_is_rejected_by_the_config_model(config):
    with pytest.raises(ValidationError):
        ToolCalled("used_tool", "tool_called", config)
