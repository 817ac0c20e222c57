"""``promptfoo_assert`` and ``promptfoo_script``: promptfoo's corner rules that the loopback
parity rows (tests/support/promptfoo_parity.py) do not reach. Citations: promptfoo 0.121.20."""

from __future__ import annotations

import asyncio
import shutil
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.promptfoo_assert import (
    PromptfooAssert,
    extract_json_objects,
    js_regex,
    levenshtein,
    openai_chat_output,
    rouge_n_score,
    split_comma_separated,
    treebank_tokens,
)
from evalh_pipeline.evaluators.promptfoo_script import PromptfooScript, build_function_body, read_result
from evalh_pipeline.models import EvalCase, ToolCall, Trace, TraceMetrics, TraceOutput

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trace(answer: str | None = "", latency_ms: int = 10, cost: float | None = None) -> Trace:
    return Trace(run_id="r", case_id="c", variant_name="v", started_at=T0, finished_at=T0, latency_ms=latency_ms,
                 output=TraceOutput(final_answer=answer), metrics=TraceMetrics(cost_usd=cost))


def judge(config: dict, the_trace: Trace, case: EvalCase | None = None):
    evaluator = PromptfooAssert("a", "promptfoo_assert", config)
    return evaluator.evaluate_sync(case or EvalCase(id="c"), the_trace, None)


def test_js_dollar_is_the_end_of_input_and_named_groups_work():
    # regex.ts (index.js:3207): new RegExp(value).test(output); JavaScript's $ has no "before a final newline"
    assert not js_regex("^abc$").search("abc\n")
    assert js_regex("(?<year>\\d{4})-[$]").search("2024-$")
    assert not js_regex("\\d").search("\u0663")  # JavaScript's \d is ASCII


def test_comma_separated_values_keep_quoted_commas_and_escapes():
    # parseCommaSeparatedValues (index.js:1361-1438)
    assert split_comma_separated(' a , "b, c",, "say \\"hi\\"" ') == ["a", "b, c", 'say "hi"']
    with pytest.raises(ValueError, match="Unterminated quoted field"):
        split_comma_separated('"open')


def test_levenshtein_counts_utf16_units_as_fastest_levenshtein_does():
    assert levenshtein("kitten", "sitting") == 3
    assert levenshtein("😀", "") == 2  # one emoji is two UTF-16 code units


def test_contains_json_reads_brace_spans_as_yaml_and_closes_a_cut_off_object():
    # extractJsonObjects (src/util/json.ts, dist/src/logger-DZQrH7Cp.js:315-341)
    assert extract_json_objects('x {"a": 1} y {b: 2} z') == [{"a": 1}, {"b": 2}]
    assert extract_json_objects('cut {"a": {"b": 1}') == [{"a": {"b": 1}}]
    assert extract_json_objects("no braces [1, 2]") == []


def test_latency_and_cost_pass_at_the_threshold_and_need_one():
    # latency.ts (index.js:2339-2349), cost.ts (index.js:1596-1606): <= passes
    assert judge({"assertion": "latency", "threshold": 10}, trace(latency_ms=10)).passed
    assert not judge({"assertion": "latency", "threshold": 10, "inverse": True}, trace(latency_ms=10)).passed
    assert judge({"assertion": "cost", "threshold": 0.5}, trace(cost=0.5)).passed
    with pytest.raises(ValueError, match="does not support providers that do not return cost"):
        judge({"assertion": "cost", "threshold": 0.5}, trace(cost=None))
    with pytest.raises(ValidationError, match="Latency assertion must have a threshold"):
        judge({"assertion": "latency"}, trace())


def test_equals_deep_compares_json_values_strictly():
    # equals.ts (index.js:1609-1625): util.isDeepStrictEqual after JSON.parse
    assert judge({"assertion": "equals", "value": {"a": [1, 2]}}, trace('{"a": [1, 2.0]}')).passed
    assert not judge({"assertion": "equals", "value": {"a": True}}, trace('{"a": 1}')).passed
    assert not judge({"assertion": "equals", "value": [1]}, trace("NaN")).passed  # JSON.parse rejects NaN


def test_values_promptfoo_rejects_are_load_errors():
    with pytest.raises(ValidationError, match='"contains" assertion type must have a string or number value'):
        PromptfooAssert("a", "promptfoo_assert", {"assertion": "contains", "value": ""})
    with pytest.raises(ValidationError, match='"regex" assertion type must have a string value'):
        PromptfooAssert("a", "promptfoo_assert", {"assertion": "regex", "value": 5})


def test_one_line_javascript_gets_a_return_after_its_declarations():
    # buildFunctionBody (index.js:2169-2181)
    assert build_function_body("output.length > 1;") == "return output.length > 1"
    assert build_function_body("const s = 'a;b'; s === output") == "const s = 'a;b'; return s === output"


def test_script_results_are_read_as_promptfoo_normalizes_them():
    # normalizeScriptResult / normalizeJavascriptAssertionResult (index.js:2203-2233, 2637-2708)
    assert read_result(0.4, "python", False, 0.5).passed is False
    assert read_result(0.4, "javascript", False, None).passed is True
    assert read_result("FALSE", "python", False, None).passed is False
    assert read_result({"pass_": True, "score": 0.2, "reason": "ok"}, "python", False, 0.5).passed is False
    assert read_result({"pass": True, "score": 0.2, "reason": "ok"}, "javascript", False, 0.5).passed is True
    assert read_result(True, "javascript", True, None).passed is False


@pytest.mark.integration  # runs the assertion in a child Python process
def test_python_script_sees_output_and_the_cases_vars():
    evaluator = PromptfooScript("s", "promptfoo_script", {
        "language": "python", "code": "context['vars']['want'] in output"})
    case = EvalCase(id="c", input={"vars": {"want": "Paris"}})
    assert asyncio.run(evaluator.evaluate(case, trace("in Paris"), None)).passed
    assert not asyncio.run(evaluator.evaluate(case, trace("in Lyon"), None)).passed


WEATHER_TOOLS = [{"type": "function", "function": {
    "name": "get_current_weather",
    "parameters": {"type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}]


def calling(*calls: tuple[str, dict], answer: str = "") -> Trace:
    return trace(answer).model_copy(update={"tool_calls": [ToolCall(id=f"call_{i}", name=name, arguments=args)
                                                           for i, (name, args) in enumerate(calls)]})


def test_openai_tool_calls_are_the_output_as_promptfoos_chat_provider_returns_them():
    # src/providers/openai/chat.ts (dist/src/chat-CG-lQMid.js:337-343): the calls alone, or the
    # message when the model also wrote text; plain text otherwise
    only_calls = openai_chat_output(calling(("get_current_weather", {"location": "Boston, MA"})))
    assert only_calls == [{"id": "call_0", "type": "function", "function": {
        "name": "get_current_weather", "arguments": '{"location":"Boston, MA"}'}}]
    assert openai_chat_output(calling(("f", {}), answer="Sure."))["content"] == "Sure."
    assert openai_chat_output(trace("plain")) == "plain"
    # outputString is JSON.stringify of the calls: is-json passes, contains reads the JSON text
    assert judge({"assertion": "is-json", "openai_tool_calls": True}, calling(("f", {"a": 1}))).passed
    assert judge({"assertion": "contains", "value": '"name":"f"', "openai_tool_calls": True}, calling(("f", {}))).passed
    assert not judge({"assertion": "is-json"}, calling(("f", {"a": 1}))).passed  # without it: the empty answer


@pytest.mark.parametrize(("the_trace", "tools", "passed", "reason"), [
    # src/assertions/openai.ts (index.js:2489-2540) and validateFunctionCall (util--ConadPK.js:844-855)
    (calling(("get_current_weather", {"location": "Boston"})), WEATHER_TOOLS, True, "Assertion passed"),
    (calling(("get_current_weather", {"unit": "c"})), WEATHER_TOOLS, False, "does not match schema"),
    (calling(("get_time", {})), WEATHER_TOOLS, False, 'Called "get_time", but there is no function with that name'),
    (trace("It is sunny."), WEATHER_TOOLS, False, "OpenAI did not return a valid-looking tools response"),
    (calling(("get_current_weather", {"location": "B"})), None, False, "No tools configured in provider"),
    (calling(("get_current_weather", {"location": "B"}), answer="Let me check."), WEATHER_TOOLS, True, "Assertion passed"),
])
def test_is_valid_openai_tools_call_follows_promptfoos_rules(the_trace, tools, passed, reason):
    verdict = judge({"assertion": "is-valid-openai-tools-call", "tools": tools, "openai_tool_calls": True}, the_trace)
    assert verdict.passed is passed and reason in verdict.reason
    # promptfoo's handler reads no `not-`: the inverse gives the same verdict
    inverse = judge({"assertion": "is-valid-openai-tools-call", "inverse": True, "tools": tools}, the_trace)
    assert inverse.passed is passed


@pytest.mark.integration  # runs the assertion in a child Node process
@pytest.mark.skipif(shutil.which("node") is None, reason="javascript assertions need Node.js (node on PATH)")
def test_a_javascript_assertion_reads_the_tool_calls_as_its_output():
    evaluator = PromptfooScript("s", "promptfoo_script", {
        "language": "javascript", "code": "output[0].function.name === 'get_current_weather'", "openai_tool_calls": True})
    called = calling(("get_current_weather", {"location": "Boston"}))
    assert asyncio.run(evaluator.evaluate(EvalCase(id="c"), called, None)).passed


def test_treebank_tokens_are_js_rouges():
    # js-rouge 3.2.3 treeBankTokenize (src/tokenize.ts), as promptfoo's rouge-n counts them; the
    # expected lists are what js-rouge returns for these sentences
    assert treebank_tokens('He said "I can\'t go." Then he cannot, won\'t... (really) at 3,000 U.S. dollars.') == [
        "He", "said", "``", "I", "ca", "n't", "go.", "''", "Then", "he", "can", "not", ",", "wo", "n't", "...",
        "(", "really", ")", "at", "3,000", "U.S.", "dollars", "."]
    assert treebank_tokens('"Quoted" start and end "here"') == ["``", "Quoted", "''", "start", "and", "end", "``", "here", "''"]
    assert treebank_tokens("  ") == []


def test_rouge_n_is_f1_over_clipped_unigram_counts():
    # src/assertions/rouge.ts rougeNScore (index.js:3245-3258)
    assert rouge_n_score("the cat sat on the mat", "the cat sat on the mat") == 1.0  # js-rouge alone gives 0.83
    assert rouge_n_score("the cat sat", "the cat sat on the mat") == pytest.approx(2 / 3)
    assert rouge_n_score("a dog", "the cat") == 0.0
    assert judge({"assertion": "rouge-n", "value": "The Cat"}, trace("the cat")).passed  # both lowercased
    assert judge({"assertion": "rouge-n", "value": "the cat sat on the mat", "inverse": True}, trace("a dog")).score == 1.0
