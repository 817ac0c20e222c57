"""promptfoo_graded reads the grading model's reply as promptfoo's matchers do (promptfoo
0.121.20, dist/src/graders-DC7jJ-Ea.js); the verdicts end to end, against a loopback grader
and promptfoo itself: tests/importers/promptfoo/test_promptfoo_verdict_parity.py."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest

from evalh_pipeline.common.context import EvaluatorContext
from evalh_pipeline.evaluators.promptfoo_graded import PromptfooGraded, closed_qa_verdict, factuality_choice
from evalh_pipeline.models import EvalCase, Trace, TraceOutput
from tests.support.openai_chat_server import echo_chat_server, grader_says

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def test_closed_qa_passes_on_a_final_y_only():
    # matchesClosedQa (:2068-2071): trailing whitespace removed, the reply ends with Y
    assert closed_qa_verdict("Reasoning...\nY\nY  \n")[0]
    assert not closed_qa_verdict("Y\nN")[0]
    assert closed_qa_verdict("Yes")[1].startswith("Model grader produced a malformed response")


def test_factuality_reads_the_json_category_then_the_legacy_letter():
    # parseFactualityJsonResponse (:1917-1933), parseLegacyFactualityResponse (:1934-1943)
    assert factuality_choice('{"category": " b ", "reason": "more"}') == ("B", "more")
    assert factuality_choice('{"category": "Z"}') == (None, "Invalid category value: Z")
    assert factuality_choice("I pick (e) because it does not matter") == ("E", "because it does not matter")
    assert factuality_choice('{"verdict": "A"} so (d) wins')[0] == "D"  # no category: the legacy letter
    assert factuality_choice("no letter here")[0] is None


@pytest.mark.integration  # a grading model on loopback
def test_the_grader_sees_the_rendered_prompt_and_custom_scores_decide():
    # getFactualityScoreLookup (:1896-1904): options.factuality overrides a letter's score; 0 fails
    case = EvalCase(id="c", input={"vars": {"q": "the capital of France"}})
    with echo_chat_server() as base_url:
        env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-test"}
        evaluator = PromptfooGraded("f", "promptfoo_graded", {
            "check": "factuality", "value": "Paris " + grader_says('{"category": "A"}'),
            "prompt": "Name {{ input.vars.q }}", "model": "gpt-4.1-mini", "scores": {"A": 0}},
            EvaluatorContext(env=env))
        messages = evaluator.grading_messages(case, "Paris")
        answer = Trace(run_id="r", case_id="c", variant_name="v", started_at=T0, finished_at=T0, latency_ms=1,
                       output=TraceOutput(final_answer="Paris"))
        verdict = asyncio.run(evaluator.evaluate(case, answer, None))
    assert "<question>\nName the capital of France\n</question>" in messages[1]["content"]
    assert not verdict.passed and verdict.score == 0 and verdict.detail["category"] == "A"
