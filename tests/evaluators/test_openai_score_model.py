"""openai_score_model asks and reads a hosted OpenAI Evals ``score_model`` grader as OpenAI's
graders guide defines it (https://developers.openai.com/api/docs/guides/graders: "Templating"
for ``{{item.*}}`` / ``{{sample.output_text}}``, "Score model graders" and the model-grader
output ``{"steps": [...], "result": <number>}``; the ``ScoreModelGrader`` object of the API
reference: ``range`` defaults to ``[0, 1]``, a score of at least ``pass_threshold`` passes).
The grading model is the loopback echo server, its reply scripted per answer."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest

from evalh_pipeline.common.context import EvaluatorContext
from evalh_pipeline.evaluators.openai_score_model import (
    RESPONSE_FORMAT,
    OpenAIScoreModel,
    render_grader_template,
    score_of,
)
from evalh_pipeline.models import EvalCase, Trace, TraceOutput
from tests.support.openai_chat_server import echo_chat_server, grader_says

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
ITEM = {"question": "Capital of France?", "answer": "Paris", "meta": {"level": 2}}
INPUT = [{"role": "developer", "content": "Rate 0-10 how well the answer matches {{ item.answer }}."},
         {"role": "user", "content": "Q: {{item.question}} (level {{item.meta.level}})\nA: {{sample.output_text}}"}]


def _grader(env: dict[str, str] | None = None, **config) -> OpenAIScoreModel:
    base = {"input": INPUT, "item": ITEM, "range": [0, 10], "pass_threshold": 7, "model": "gpt-4o-mini"}
    return OpenAIScoreModel("score", "openai_score_model", {**base, **config}, EvaluatorContext(env=env or {}))


def _trace(answer: str) -> Trace:
    return Trace(run_id="r", case_id="c", variant_name="v", started_at=T0, finished_at=T0, latency_ms=1,
                 output=TraceOutput(final_answer=answer))


def test_the_messages_are_the_templates_rendered_with_item_and_sample():
    body = _grader(sampling_params={"temperature": 0, "seed": 3}).grading_body('{"city": "Paris"}')
    assert body["messages"] == [
        {"role": "developer", "content": "Rate 0-10 how well the answer matches Paris."},
        {"role": "user", "content": 'Q: Capital of France? (level 2)\nA: {"city": "Paris"}'}]
    assert body["response_format"] == RESPONSE_FORMAT
    assert (body["model"], body["temperature"], body["seed"]) == ("gpt-4o-mini", 0, 3)
    json_input = [{"role": "user", "content": "{{sample.output_json.city}} / {{item.missing}} / {{other.x}}"}]
    assert _grader(input=json_input).grading_body('{"city": "Paris"}')["messages"][0]["content"] == \
        "Paris /  / {{other.x}}"


def test_without_a_sample_only_the_item_is_rendered_in():
    # What the hosted-export import does: the item goes into the case, the answer comes at run time.
    text = "{{ item.answer }} / {{item.meta}} / {{ sample.output_text }} / {{other.x}}"
    assert render_grader_template(text, ITEM) == 'Paris / {"level": 2} / {{ sample.output_text }} / {{other.x}}'
    assert render_grader_template(text, ITEM, {"output_text": "Lyon"}) == 'Paris / {"level": 2} / Lyon / {{other.x}}'


def test_the_result_is_read_from_the_json_reply_within_range():
    assert score_of('{"steps": [], "result": 0.5}', 0, 1) == (0.5, "")
    assert score_of('{"result": 10}', 0, 10) == (10.0, "")
    assert score_of('{"result": 11}', 0, 10)[0] is None
    assert score_of("7", 0, 10)[0] is None               # a number, not the output object
    assert score_of('{"result": "7"}', 0, 10)[0] is None  # result must be a number
    assert score_of("not json", 0, 10)[0] is None
    assert score_of(None, 0, 1)[0] is None


# (scripted grader reply, range, pass_threshold, passed, score): result >= pass_threshold passes.
PARITY = [
    ('{"steps": [{"description": "d", "conclusion": "c"}], "result": 7}', [0, 10], 7, True, 7.0),  # at the threshold
    ('{"steps": [], "result": 6.9}', [0, 10], 7, False, 6.9),
    ('{"steps": [], "result": 1}', [0, 1], 0.5, True, 1.0),
    ('{"steps": [], "result": 0}', [0, 1], 0.5, False, 0.0),
    ('{"steps": [], "result": -2}', [-5, 5], -3, True, -2.0),
    ('{"steps": [], "result": 12}', [0, 10], 7, False, 0.0),   # outside range: an invalid grade
    ("I would say 9", [0, 10], 7, False, 0.0),                # not the output object
]


@pytest.mark.integration  # a grading model on loopback
@pytest.mark.parametrize(("reply", "bounds", "threshold", "passed", "score"), PARITY)
def test_verdict_parity_with_the_graders_guide(reply, bounds, threshold, passed, score):
    with echo_chat_server() as base_url:
        grader = _grader({"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "sk-test"},
                         range=bounds, pass_threshold=threshold)
        verdict = asyncio.run(grader.evaluate(EvalCase(id="c"), _trace("Paris " + grader_says(reply)), None))
    assert (verdict.passed, verdict.score) == (passed, pytest.approx(score))
    assert verdict.detail["grader_reply"] == reply


def test_a_bad_config_is_refused():
    for bad, why in (({"range": [1, 1]}, "low < high"), ({"sampling_params": {"top_k": 3}}, "top_k not known"),
                     ({"input": [{"role": "user", "content": "x", "name": "n"}]}, "{role, content}")):
        with pytest.raises(ValueError, match=why):
            _grader(**bad)
