"""evaluator_set: a weighted score over member evaluators, against a threshold or all passing.

The rule is promptfoo's for a test's assertions (src/assertions/assertionsResult.ts,
AssertionsResult.addResult / testResult: score = sum(score × weight) / sum(weight), pass when
score >= threshold, else when no assertion failed; src/assertions/index.ts,
runAssertionInternal: an assertion of weight 0 never fails).
"""

from __future__ import annotations

import asyncio
import shutil
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.base import SyncEvaluator
from evalh_pipeline.evaluators.evaluator_set import EvaluatorSet
from evalh_pipeline.evaluators.registry import EVALUATORS
from evalh_pipeline.models import EvalCase, Trace, TraceOutput

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
CASE = EvalCase(id="c1")


def trace(answer: str) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 output=TraceOutput(final_answer=answer))


def contains(name: str, text: str, weight: float = 1.0) -> dict:
    return {"name": name, "type": "contains_text", "config": {"all_of": [text]}, "weight": weight}


def judge(config: dict, answer: str):
    return asyncio.run(EvaluatorSet("quality", "evaluator_set", config).evaluate(CASE, trace(answer), None))


def test_without_a_threshold_every_member_must_pass():
    members = [contains("paris", "Paris"), contains("france", "France")]
    assert judge({"evaluators": members}, "Paris, France").passed
    verdict = judge({"evaluators": members}, "Paris")
    assert not verdict.passed and verdict.score == 0.5
    assert verdict.reason.startswith("france: ")


def test_a_threshold_passes_on_the_weighted_mean_even_when_a_member_failed():
    # paris passes (1 × 3), france fails (0 × 1): 3 / 4 = 0.75.
    members = [contains("paris", "Paris", weight=3), contains("france", "France")]
    verdict = judge({"evaluators": members, "threshold": 0.75}, "Paris")
    assert verdict.passed and verdict.score == 0.75
    assert "1 of 2 failed: france" in verdict.reason
    verdict = judge({"evaluators": members, "threshold": 0.8}, "Paris")
    assert not verdict.passed and verdict.score == 0.75


def test_each_members_verdict_stays_in_the_detail():
    verdict = judge({"evaluators": [contains("paris", "Paris", 2), contains("france", "France")], "threshold": 0.5},
                    "Paris")
    members = verdict.detail["members"]
    assert [(m["name"], m["passed"], m["score"], m["weight"]) for m in members] == [
        ("paris", True, 1.0, 2.0), ("france", False, 0.0, 1.0)]
    assert "France" in members[1]["reason"] and verdict.detail["threshold"] == 0.5


def test_a_member_of_weight_zero_is_recorded_but_never_fails_the_set():
    verdict = judge({"evaluators": [contains("paris", "Paris"), contains("france", "France", weight=0)]}, "Paris")
    assert verdict.passed and verdict.score == 1.0
    assert verdict.detail["members"][1]["passed"] is False


def test_weights_summing_to_zero_score_zero():
    verdict = judge({"evaluators": [contains("paris", "Paris", 0)], "threshold": 0}, "Paris")
    assert verdict.score == 0.0 and verdict.passed  # 0 >= 0, as promptfoo's threshold 0


def test_a_nested_set_counts_with_its_own_score_and_weight():
    inner = {"name": "inner", "type": "evaluator_set", "weight": 2, "config": {
        "evaluators": [contains("paris", "Paris"), contains("rome", "Rome")], "threshold": 0.5}}
    verdict = judge({"evaluators": [inner, contains("france", "France")]}, "Paris")
    # inner: 0.5 >= 0.5 passes; france fails: the outer set (no threshold) fails with (0.5×2 + 0) / 3.
    assert not verdict.passed and verdict.score == pytest.approx(1 / 3)
    assert verdict.detail["members"][0]["passed"] and verdict.detail["members"][0]["score"] == 0.5


class Raises(SyncEvaluator):
    """An evaluator whose judging raises."""

    def evaluate_sync(self, case, trace, artifact):
        raise RuntimeError("broken grader")


def test_a_member_that_raises_fails_itself_only():
    members = [{"name": "bad", "type": "raises"}, contains("paris", "Paris", weight=3)]
    with EVALUATORS.registered("raises", Raises):
        verdict = judge({"evaluators": members, "threshold": 0.7}, "Paris")
    assert verdict.passed and verdict.score == 0.75
    bad = verdict.detail["members"][0]
    assert not bad["passed"] and bad["score"] == 0.0 and "RuntimeError: broken grader" in bad["reason"]


@pytest.mark.parametrize("config, message", [
    ({"evaluators": []}, "at least 1 item"),
    ({"evaluators": [{"name": "x", "type": "no_such_type"}]}, "member 'x': unknown evaluator type 'no_such_type'"),
    ({"evaluators": [{"name": "x", "type": "regex_match", "config": {}}]}, "member 'x' (regex_match): config.pattern"),
    ({"evaluators": [contains("a", "A"), contains("a", "B")]}, "unique within the set: a"),
    ({"evaluators": [contains("a", "A", weight=-1)]}, "greater than or equal to 0"),
])
def test_bad_config_is_rejected_with_what_is_wrong(config, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        EvaluatorSet("quality", "evaluator_set", config)


def _judge_case(config: dict, answer: str, variables: dict):
    case = EvalCase(id="c1", input={"vars": variables})
    return asyncio.run(EvaluatorSet("quality", "evaluator_set", config).evaluate(case, trace(answer), None))


@pytest.mark.skipif(shutil.which("node") is None, reason="javascript transforms need Node.js (node on PATH)")
def test_members_judge_the_answer_as_an_inline_javascript_transform_rewrites_it():
    # promptfoo's getInlineTransformFunction (src/util/transform.ts): one line is `return <line>`.
    config = {"transform": {"code": "output.toUpperCase() + ' ' + context.vars.city"},
              "evaluators": [contains("shout", "HELLO paris")]}
    verdict = _judge_case(config, "hello", {"city": "paris"})
    assert verdict.passed and verdict.detail["transformed_output"] == "HELLO paris"


@pytest.mark.skipif(shutil.which("node") is None, reason="javascript transforms need Node.js (node on PATH)")
def test_a_file_transform_and_an_object_result_read_as_json_text():
    source = "module.exports = { pick: (output) => ({answer: JSON.parse(output).a}) };\n"
    config = {"transform": {"source": source, "name": "t.js", "function": "pick"},
              "evaluators": [contains("json", '{"answer":1}')]}
    verdict = _judge_case(config, '{"a": 1}', {})
    assert verdict.passed and verdict.detail["transformed_output"] == '{"answer":1}'


@pytest.mark.skipif(shutil.which("node") is None, reason="javascript transforms need Node.js (node on PATH)")
def test_a_transform_that_returns_nothing_or_throws_fails_the_set_with_why():
    with pytest.raises(RuntimeError, match="did not return a value"):
        _judge_case({"transform": {"code": "undefined"}, "evaluators": [contains("x", "x")]}, "x", {})
    with pytest.raises(RuntimeError, match="Transform failed: .*boom"):
        _judge_case({"transform": {"code": "(() => { throw new Error('boom') })()"},
                     "evaluators": [contains("x", "x")]}, "x", {})


def test_the_answer_reaches_a_python_transform_as_data_never_as_code():
    source = "def get_transform(output, context):\n    return output[::-1]\n"
    answer = "'); import os; os._exit(3) #"
    verdict = _judge_case({"transform": {"language": "python", "source": source},
                           "evaluators": [contains("reversed", answer[::-1])]}, answer, {})
    assert verdict.passed


def test_without_node_a_javascript_transform_says_so(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(RuntimeError, match=r"needs Node.js \(node on PATH\)"):
        _judge_case({"transform": {"code": "output"}, "evaluators": [contains("x", "x")]}, "x", {})
