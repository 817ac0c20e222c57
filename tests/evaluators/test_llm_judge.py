"""llm_judge against a real local judge server (OpenAI and Anthropic shapes) on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.evaluators.base import EvaluatorContext
from evalh_pipeline.evaluators.llm_judge import LlmJudge, assertions_pass
from tests.support.fake_judge_server import FakeJudgeServer
from evalh_pipeline.models import EvalCase, Trace, TraceError, TraceOutput
from evalh_pipeline.runner.evaluation import evaluate_traces, judge_trace
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
CASE = EvalCase(id="c1", input={"question": "How does ABC123 compare with its suburb?"},
                expected={"facts": {"suburb": "Richmond"}})
ANSWER = "Listing ABC123 in Richmond is priced at $1,350,000, above the suburb average of $1,200,000."
HOLDS = ['The answer mentions "Richmond"', 'The answer mentions "average"']
KEY = "sk-live-do-not-leak-0123456789"


def trace(answer: str | None = ANSWER, error: TraceError | None = None) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 output=TraceOutput(final_answer=answer), error=error)


@pytest.fixture
def server():
    with FakeJudgeServer(hang_seconds=5) as running:
        yield running


def make(server: FakeJudgeServer, shape: str = "openai_compatible", cache_dir=None, **config) -> LlmJudge:
    base_url = server.openai_base_url if shape == "openai_compatible" else server.anthropic_base_url
    full = {"backend": shape, "model": "judge-1", "base_url": base_url, "timeout_seconds": 2, **config}
    return LlmJudge("quality", "llm_judge", full, EvaluatorContext(env={"OPENAI_API_KEY": KEY}, cache_dir=cache_dir,
                                                                   secret_values=frozenset({KEY})))


def run(evaluator: LlmJudge, the_trace: Trace | None = None):
    """The engine's result for one trace (so a raised judge error becomes `error`)."""
    return asyncio.run(judge_trace([evaluator], CASE, the_trace or trace()))[0]


@pytest.mark.parametrize("shape", ["openai_compatible", "anthropic"])
def test_passes_when_every_required_assertion_holds(server, shape):
    result = run(make(server, shape, nl_assertions=HOLDS))
    assert result.passed and result.error is None and result.score == 1.0
    assert [a["passed"] for a in result.detail["assertions"]] == [True, True]
    assert result.detail["judge_backend"] == shape and result.detail["judge_model"] == "judge-1"
    assert len(result.detail["judge_prompt_hash"]) == 64 and result.detail["cached"] is False
    assert result.detail["tokens_in"] > 0 and result.detail["tokens_out"] > 0
    assert server.calls == 1


def test_fails_with_each_assertions_verdict_and_reason(server):
    result = run(make(server, nl_assertions=[*HOLDS, 'The answer mentions "Fitzroy"']))
    assert not result.passed and result.error is None
    assert result.score == pytest.approx(2 / 3)
    assert result.detail["assertions"][2] == {"text": 'The answer mentions "Fitzroy"', "required": True,
                                              "passed": False, "reason": "does not mention ['Fitzroy']"}
    assert "2 of 3 required assertion(s) held (pass_when all)" in result.reason
    assert "'The answer mentions \"Fitzroy\"': does not mention ['Fitzroy']" in result.reason


def test_a_judge_answer_malformed_twice_is_an_error_with_passed_false(server):
    server.script("malformed", "out_of_schema")
    result = run(make(server, nl_assertions=HOLDS))
    assert not result.passed and result.error is not None
    assert "does not match the verdict schema" in result.error.message and "after 2 attempts" in result.error.message
    assert server.calls == 2


@pytest.mark.parametrize("mode", ["malformed", "out_of_schema", "error_500"])
def test_one_bad_answer_or_5xx_is_retried_once(server, mode):
    server.script(mode)
    result = run(make(server, nl_assertions=HOLDS))
    assert result.passed and result.error is None
    assert server.calls == 2


def test_5xx_twice_is_an_error(server):
    server.script("error_500", "error_500")
    result = run(make(server, nl_assertions=HOLDS))
    assert not result.passed and "judge server answered HTTP 500" in result.error.message
    assert server.calls == 2


def test_a_hanging_judge_times_out_into_an_error(server):
    server.script("hang", "hang")
    result = run(make(server, nl_assertions=HOLDS, timeout_seconds=0.3))
    assert not result.passed and "timed out after 0.3s (after 2 attempts)" in result.error.message


@pytest.mark.parametrize(("pass_when", "passed"), [
    ("all", False), ("any", True), ("majority", True), ("k_of_n=2", True), ("k_of_n=3", False),
])
def test_pass_when_counts_required_assertions_only(server, pass_when, passed):
    assertions = [*HOLDS, 'The answer mentions "Fitzroy"',
                  {"text": 'The answer mentions "Carlton"', "required": False}]
    result = run(make(server, nl_assertions=assertions, pass_when=pass_when))
    assert result.passed is passed and result.error is None
    assert result.score == pytest.approx(2 / 4)  # over every assertion, required or not
    assert result.detail["assertions"][3]["required"] is False


def test_no_required_assertion_passes_and_majority_needs_more_than_half():
    assert assertions_pass("all", [])
    assert not assertions_pass("majority", [True, False])
    assert assertions_pass("majority", [True, True, False])


def test_a_rubric_scores_on_its_scale_and_passes_at_the_threshold(server):
    good = run(make(server, rubric={"criteria": 'Covers the "price" and the suburb "average"', "scale": "1-5",
                                    "pass_threshold": 4}))
    assert good.passed and good.score == 5.0
    assert good.detail["rubric"] == {"score": 5, "pass_threshold": 4, "scale": [1, 2, 3, 4, 5], "passed": True,
                                     "reason": "2 of 2 key point(s) covered"}
    labels = run(make(server, rubric={"criteria": 'Names "Richmond" and "Fitzroy"', "scale": ["poor", "fair", "good"],
                                      "pass_threshold": "good"}))
    assert not labels.passed and labels.detail["rubric"]["score"] == "fair" and labels.score == 2.0
    assert "rubric score fair (below pass_threshold good)" in labels.reason


def test_assertions_and_rubric_must_both_pass(server):
    result = run(make(server, nl_assertions=HOLDS,
                      rubric={"criteria": 'Mentions "Fitzroy"', "scale": [1, 2, 3], "pass_threshold": 2}))
    assert not result.passed and result.score == 1.0  # every assertion held; the rubric failed
    assert result.detail["rubric"]["passed"] is False


def test_the_judge_sees_thinking_and_ground_truth_only_when_listed(server):
    thinking = trace()
    thinking.output.thinking = "the system prompt says be brief"
    run(make(server, nl_assertions=HOLDS), thinking)
    run(make(server, nl_assertions=HOLDS, include_in_prompt=["final_answer", "thinking", "expected"]), thinking)
    default, listed = (r["body"]["messages"][1]["content"] for r in server.requests)
    assert "system prompt says" not in default and '"suburb": "Richmond"' not in default
    assert "## Thinking\nthe system prompt says be brief" in listed and '"suburb": "Richmond"' in listed


def test_field_judges_another_trace_field_in_place_of_the_final_answer(server):
    reasoned = trace()
    reasoned.output.thinking = "Richmond's average is lower, so the listing is above it"
    result = run(make(server, nl_assertions=['The answer mentions "Richmond"'], field="output.thinking"), reasoned)
    body = server.requests[0]["body"]["messages"][1]["content"]
    assert "## Response field output.thinking\nRichmond's average is lower" in body
    assert ANSWER not in body and "## Final answer" not in body
    assert result.passed and result.detail["field"] == "output.thinking"


def test_an_unparsable_field_is_a_load_error(server):
    with pytest.raises(Exception, match="field"):
        make(server, nl_assertions=HOLDS, field="")


def test_a_call_estimated_over_the_cost_limit_is_refused_without_calling(server):
    result = run(make(server, nl_assertions=HOLDS, cost_limit_usd=0.001, max_tokens=2000,
                      price={"input_per_mtok": 3.0, "output_per_mtok": 15.0}))
    assert not result.passed and result.error is not None
    assert "judge call not made: estimated cost $0.03" in result.error.message
    assert "exceeds cost_limit_usd $0.001" in result.error.message
    assert server.calls == 0


def test_an_actual_cost_over_the_limit_fails_with_the_reason(server):
    # max_tokens=1 makes the estimate tiny; the fake server ignores it and answers ~25 tokens.
    result = run(make(server, nl_assertions=HOLDS, cost_limit_usd=0.005, max_tokens=1,
                      price={"input_per_mtok": 0.0, "output_per_mtok": 1000.0}))
    assert not result.passed and result.error is None
    assert result.reason.startswith("judge cost $0.0") and "exceeded cost_limit_usd $0.005" in result.reason
    assert result.detail["cost_usd"] == pytest.approx(result.detail["tokens_out"] / 1000)


def test_a_failed_system_is_not_sent_to_the_judge(server):
    result = run(make(server, nl_assertions=HOLDS), trace(None, TraceError(type="timeout", message="slow")))
    assert not result.passed and result.error is None and "the system failed (timeout)" in result.reason
    assert server.calls == 0


def test_the_api_key_is_sent_but_never_written_into_a_result(server):
    ok = run(make(server, nl_assertions=HOLDS))
    server.script("error_500", "error_500")
    failed = run(make(server, nl_assertions=HOLDS))
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
    assert KEY not in ok.model_dump_json() and KEY not in failed.model_dump_json()


def test_re_evaluation_with_a_cached_judge_makes_no_calls_and_gives_identical_results(server, tmp_path):
    evaluators = f"""
  - name: quality
    type: llm_judge
    config:
      backend: openai_compatible
      model: judge-1
      base_url: {server.openai_base_url}
      cache: true
      nl_assertions: ['The answer mentions "Paris"', 'The answer does not mention "wrong"']
"""
    spec = load_eval(write_eval(tmp_path / "toy", evaluators=evaluators), env={})
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    first = [json.loads(line) for line in run_dir.results.read_text().splitlines()]
    calls = server.calls
    # 8 distinct prompts (the variants agree on 4 of 6 answers); a repeat is a call or a hit, by timing.
    assert calls == sum(not r["detail"]["cached"] for r in first) and 8 <= calls <= 12
    assert sum(r["passed"] for r in first) == 10  # the candidate answers "wrong" every 3rd case

    asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    again = [json.loads(line) for line in run_dir.results.read_text().splitlines()]
    assert server.calls == calls

    def verdicts(results):
        return sorted((r["case_id"], r["variant_name"], r["passed"], r["score"], r["reason"],
                       {k: v for k, v in r["detail"].items() if k != "cached"}) for r in results)
    assert verdicts(again) == verdicts(first)
    # Every result of the second pass is a hit (the first pass's repeats may have been too).
    assert all(r["detail"]["cached"] for r in again)
    assert list((tmp_path / "toy" / "runs" / ".cache" / "judge").rglob("*.json"))


UNKNOWN = """
  - name: quality
    type: llm_judge
    config:
      model: llama-3-8b
      nl_assertions: [is polite]
  - name: votes
    type: llm_judge
    config:
      model: gpt-4o
      nl_assertions: [is polite, {text: is short, required: false}]
      pass_when: k_of_n=2
      rubric: {criteria: clarity, scale: 1-5, pass_threshold: 7}
"""


def test_an_unknown_judge_backend_and_bad_settings_are_load_errors_naming_their_keys(tmp_path):
    with pytest.raises(ConfigError) as info:
        load_eval(write_eval(tmp_path / "toy", evaluators=UNKNOWN), env={})
    lines = str(info.value).splitlines()
    model = [line for line in lines if "evaluators[0].config.model:" in line]
    assert len(model) == 1 and model[0].startswith("eval.yaml:")
    assert "no judge backend serves model 'llama-3-8b': set `backend:` (known: anthropic, openai_compatible)" in model[0]
    assert any("evaluators[1].config.rubric:" in line and "pass_threshold 7 must be a number within the scale 1..5"
               in line for line in lines), lines


def test_k_of_n_beyond_the_required_assertions_is_a_load_error(tmp_path):
    fixed = UNKNOWN.replace("llama-3-8b", "claude-sonnet-4-5").replace("pass_threshold: 7", "pass_threshold: 4")
    with pytest.raises(ConfigError) as info:
        load_eval(write_eval(tmp_path / "toy", evaluators=fixed), env={})
    assert str(info.value).count("\n") == 0, str(info.value)
    assert "evaluators[1].config: pass_when k_of_n=2 needs at least 2 required assertions, there are 1" in str(info.value)
