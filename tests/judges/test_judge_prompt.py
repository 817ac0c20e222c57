"""Judge prompts show only what include_in_prompt lists; answers are read strictly."""

from __future__ import annotations

import re
from datetime import datetime, timezone

import pytest

from evalh_pipeline.judges.prompt import (
    Assertion,
    BadJudgeAnswer,
    RubricSpec,
    build_prompt,
    parse_answer,
    verdict_schema,
)
from evalh_pipeline.models import EvalCase, Trace, TraceMessage, TraceOutput

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
CASE = EvalCase(id="c1", input={"question": "Is ABC123 above average?"},
                expected={"facts": {"suburb": "Richmond"}, "answer_should_include": ["average"]})
TRACE = Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
              output=TraceOutput(final_answer="Yes, above the average.", thinking="secret plan"),
              messages=[TraceMessage(role="assistant", thinking="turn thought")])
ONE = [Assertion("mentions \"average\"")]


def test_the_default_sections_leave_the_thinking_and_ground_truth_out():
    prompt = build_prompt(CASE, TRACE, ["input", "final_answer"], ONE, None)
    assert "## Input" in prompt.user and "Yes, above the average." in prompt.user
    assert "secret plan" not in prompt.user and "Richmond" not in prompt.user


def test_listed_thinking_includes_every_turn_and_expected_is_ground_truth():
    prompt = build_prompt(CASE, TRACE, ["thinking", "expected"], ONE, None)
    assert "## Thinking\nsecret plan\nturn thought" in prompt.user
    assert "## Ground truth (expected)" in prompt.user and '"suburb": "Richmond"' in prompt.user
    assert "must_call_tools" not in prompt.user  # empty defaults are not ground truth


def test_the_prompt_hash_follows_the_content():
    a = build_prompt(CASE, TRACE, ["final_answer"], ONE, None)
    b = build_prompt(CASE, TRACE, ["final_answer"], ONE, RubricSpec("clear", (1, 2, 3)))
    assert a.sha256 == build_prompt(CASE, TRACE, ["final_answer"], ONE, None).sha256 != b.sha256


def test_an_answer_in_fences_or_prose_is_read():
    schema = verdict_schema(1, None)
    body = '{"assertions": [{"index": 1, "passed": false, "reason": "no"}]}'
    assert parse_answer(f"```json\n{body}\n```", schema)["assertions"][0]["passed"] is False
    assert parse_answer(f"Here you go: {body} Thanks.", schema)["assertions"][0]["reason"] == "no"


@pytest.mark.parametrize(("text", "message"), [
    ("passes, mostly {", "is not JSON"),
    ('{"verdict": "fine"}', "does not match the verdict schema at (top)"),
    ('{"rubric": {"score": 7, "reason": "x"}}', "at rubric/score: 7 is not one of [1, 2, 3]"),
])
def test_bad_answers_say_what_is_wrong(text, message):
    schema = verdict_schema(0, (1, 2, 3))
    with pytest.raises(BadJudgeAnswer, match=re.escape(message)):
        parse_answer(text, schema)


def test_every_assertion_needs_exactly_one_verdict():
    schema = verdict_schema(2, None)
    twice = ('{"assertions": [{"index": 1, "passed": true, "reason": "a"},'
             ' {"index": 1, "passed": true, "reason": "b"}]}')
    with pytest.raises(BadJudgeAnswer, match="exactly one verdict per assertion"):
        parse_answer(twice, schema)
