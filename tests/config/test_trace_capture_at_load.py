"""Issue 32: a ``trace.capture`` list that drops what an evaluator reads is said at load.

Filesystem.md's own example list (``[final_answer, tool_calls, tool_results, messages,
latency, tokens]``) drops thinking, structured output and cost; ``thinking_present``,
``cost_under`` and ``schema_match`` then judged traces without them, silently. Each such
evaluator now gets one warning naming it and the capture entry it needs.
"""

from __future__ import annotations

import json

import pytest

from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.integration

CASE_A = "[final_answer, tool_calls, tool_results, messages, latency, tokens]"


def _eval(tmp_path, capture: str, evaluators: str) -> None:
    (tmp_path / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'x', 'thinking': 't'}\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n")
    (tmp_path / "eval.yaml").write_text(
        "eval: {name: captured}\ndataset: {type: jsonl, path: cases.jsonl}\n"
        "systems:\n  - {name: a, adapter: python_function, target: agent:run}\n"
        f"trace:\n  capture: {capture}\n"
        f"evaluators:\n{evaluators}")


def _warnings(stderr: str) -> list[str]:
    return [line.removeprefix("warning: ") for line in stderr.splitlines() if line.startswith("warning: ")]


def test_evaluators_reading_what_capture_drops_are_each_named_at_dry_run(tmp_path, env):
    _eval(tmp_path, CASE_A,
          "  - {name: reasoned, type: thinking_present}\n"
          "  - {name: cheap, type: cost_under, config: {max_usd: 0.1}}\n"
          "  - {name: shaped, type: schema_match, config: {schema: {type: object}}}\n"
          "  - {name: fast start, type: latency_first_token_under, config: {max_ms: 100}}\n"
          "  - {name: says x, type: contains_text, config: {all_of: [x]}}\n"   # final_answer is kept
          "  - {name: called, type: tool_called, config: {tool_name: search}}\n")  # so are the tools

    proc = run_evalh(["run", "--dry-run", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    hint = "to trace.capture, or remove the key to keep everything)"
    assert _warnings(proc.stderr) == [
        f"eval.yaml:6 trace.capture: 'thinking' is not listed, so output.thinking is dropped before evaluator "
        f"'reasoned' (thinking_present) reads it (add thinking {hint}",
        f"eval.yaml:6 trace.capture: 'cost' is not listed, so metrics.cost_usd is dropped before evaluator "
        f"'cheap' (cost_under) reads it (add cost {hint}",
        f"eval.yaml:6 trace.capture: 'structured' is not listed, so output.structured is dropped before evaluator "
        f"'shaped' (schema_match) reads it (add structured {hint}",
        f"eval.yaml:6 trace.capture: 'streaming' is not listed, so metrics.latency_first_token_ms is dropped before "
        f"evaluator 'fast start' (latency_first_token_under) reads it (add streaming {hint}",
    ]


def test_a_field_path_and_a_judge_prompt_are_checked_like_built_in_reads(tmp_path, env):
    _eval(tmp_path, "[final_answer]",
          "  - {name: first call, type: exact_match, config: {field: 'tool_calls[0].name', expected: search}}\n"
          "  - {name: judge, type: llm_judge, config: {model: m, backend: openai_compatible,"
          " base_url: 'http://127.0.0.1:9', nl_assertions: [ok], include_in_prompt: [input, final_answer, thinking]}}\n")

    proc = run_evalh(["run", "--dry-run", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert [w.split(" reads it")[0] for w in _warnings(proc.stderr)] == [
        "eval.yaml:6 trace.capture: 'tool_calls' is not listed, so tool_calls[0].name is dropped before evaluator "
        "'first call' (exact_match)",
        "eval.yaml:6 trace.capture: 'thinking' is not listed, so output.thinking is dropped before evaluator "
        "'judge' (llm_judge)",
    ]


def test_a_capture_list_with_what_the_evaluators_read_loads_quietly(tmp_path, env):
    _eval(tmp_path, "[final_answer, thinking, cost, structured]",
          "  - {name: reasoned, type: thinking_present}\n"
          "  - {name: cheap, type: cost_under, config: {max_usd: 0.1}}\n"
          "  - {name: shaped, type: schema_match, config: {schema: {type: object}}}\n")

    proc = run_evalh(["run", "--dry-run", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert _warnings(proc.stderr) == []


def test_strict_makes_a_dropped_field_an_error(tmp_path, env):
    _eval(tmp_path, CASE_A, "  - {name: reasoned, type: thinking_present}\n")

    proc = run_evalh(["run", "--dry-run", "--strict", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        "eval.yaml:6 trace.capture: 'thinking' is not listed, so output.thinking is dropped before evaluator "
        "'reasoned' (thinking_present) reads it (add thinking to trace.capture, or remove the key to keep "
        "everything) (an error with --strict)")
