"""Issue 39 item 8: the bundled keyword judge says how it decides, and that an assertion
without a "quoted phrase" gives it nothing to check: in each result's reason, and in one
warning line at load (naming the file, the line, the evaluator's entry and the assertion)."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone

import pytest

from evalh_pipeline.evaluators.base import EvaluatorContext
from evalh_pipeline.evaluators.llm_judge import LlmJudge
from tests.support.fake_judge_server import FakeJudgeServer
from evalh_pipeline.models import EvalCase, Trace, TraceOutput
from evalh_pipeline.runner.evaluation import judge_trace
from tests.support.evalh_process import run_evalh

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
CAPITAL = "The answer names the correct capital city"


def _judge(server: FakeJudgeServer, model: str, assertions: list[str]) -> LlmJudge:
    return LlmJudge("capital", "llm_judge", {"backend": "openai_compatible", "model": model,
                                             "base_url": server.openai_base_url, "timeout_seconds": 5,
                                             "nl_assertions": assertions}, EvaluatorContext())


def _result(evaluator: LlmJudge, answer: str):
    case = EvalCase(id="c1", input={"question": "What is the capital of Canada?"})
    trace = Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                  output=TraceOutput(final_answer=answer))
    return asyncio.run(judge_trace([evaluator], case, trace))[0]


def test_an_unquoted_assertion_passes_toronto_and_the_reason_says_it_was_not_checked():
    with FakeJudgeServer() as server:
        result = _result(_judge(server, "fake-judge", [CAPITAL, 'The answer says "Ottawa"']), "Toronto")

    assert not result.passed  # the quoted assertion is checked and fails
    held = result.detail["assertions"][0]
    assert held["passed"] is True
    assert held["reason"].startswith('nothing to check: no "quoted phrase" in the assertion')
    assert (f"held unchecked (no \"quoted phrase\": the keyword judge passes any answer): {CAPITAL!r}"
            in result.reason)
    assert "'The answer says \"Ottawa\"': does not mention ['Ottawa']" in result.reason


def test_a_real_judge_models_reason_makes_no_claim_about_the_keyword_rule():
    with FakeJudgeServer() as server:
        result = _result(_judge(server, "judge-1", [CAPITAL]), "Toronto")

    assert result.passed
    assert "held unchecked" not in result.reason


def _eval(tmp_path, model: str) -> None:
    (tmp_path / "agent.py").write_text("def run(case, variant):\n    return {'final_answer': 'Toronto'}\n")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {"q": "capital of Canada?"}}) + "\n")
    (tmp_path / "eval.yaml").write_text(
        "eval: {name: capitals}\ndataset: {type: jsonl, path: cases.jsonl}\n"
        "systems:\n  - {name: a, adapter: python_function, target: agent:run}\n"
        "evaluators:\n"
        "  - name: capital\n    type: llm_judge\n    config:\n"
        f"      backend: openai_compatible\n      model: {model}\n      base_url: http://127.0.0.1:9/v1\n"
        "      nl_assertions:\n"
        f"        - {CAPITAL}\n"
        "        - The answer says \"Ottawa\"\n"
        "      rubric: {criteria: Is it right, scale: 1-5, pass_threshold: 4}\n"
        "  - name: private\n    type: thinking_does_not_leak\n    config:\n"
        f"      judge: {{backend: anthropic, model: {model}, base_url: 'http://127.0.0.1:9',"
        " assertions: [The thinking keeps the instructions]}\n")


def _warnings(stderr: str) -> list[str]:
    return [line.removeprefix("warning: ") for line in stderr.splitlines() if line.startswith("warning: ")]


@pytest.mark.integration
def test_dry_run_warns_once_per_assertion_the_keyword_judge_cannot_check(tmp_path, env):
    _eval(tmp_path, "fake-judge")

    proc = run_evalh(["run", "--dry-run", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    why = 'it has no "quoted phrase", so it passes for any answer (quote the words the answer must contain)'
    assert _warnings(proc.stderr) == [
        f"eval.yaml:13 evaluators[0].config.nl_assertions[0]: the bundled keyword judge (model fake-judge) has "
        f"nothing to check in assertion {CAPITAL!r}: {why}",
        "eval.yaml:15 evaluators[0].config.rubric.criteria: the bundled keyword judge (model fake-judge) has "
        f"nothing to check in the rubric criteria 'Is it right': {why}",
        "eval.yaml:19 evaluators[1].config.judge.assertions[0]: the bundled keyword judge (model fake-judge) has "
        f"nothing to check in assertion 'The thinking keeps the instructions': {why}",
    ]


@pytest.mark.integration
def test_another_judge_model_loads_without_the_warning(tmp_path, env):
    _eval(tmp_path, "judge-1")

    proc = run_evalh(["run", "--dry-run", "eval.yaml"], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert _warnings(proc.stderr) == []
