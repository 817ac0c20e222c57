"""contains_text: all_of / any_of / none_of, fallback to the case's expectations, field paths."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.contains_text import ContainsText
from evalh_pipeline.models import EvalCase, Trace, TraceOutput

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def case(**expected) -> EvalCase:
    return EvalCase(id="c1", expected=expected)


def trace(answer: str | None = None, thinking: str | None = None) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 output=TraceOutput(final_answer=answer, thinking=thinking))


def judge(config: dict, the_trace: Trace, the_case: EvalCase | None = None):
    evaluator = ContainsText("mentions", "contains_text", config)
    return asyncio.run(evaluator.evaluate(the_case or case(), the_trace, None))


def test_passes_when_any_of_matches():
    verdict = judge({"any_of": ["Paris", "Lyon"]}, trace("The capital is Paris."))
    assert verdict.passed and verdict.score == 1.0
    assert verdict.detail["any_of_matched"] == ["Paris"]


def test_fails_when_a_required_string_is_missing():
    verdict = judge({"all_of": ["Paris", "France"]}, trace("Paris, of course"))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.detail["missing"] == ["France"]
    assert "missing required: ['France']" in verdict.reason


def test_fails_when_no_any_of_matches():
    verdict = judge({"any_of": ["Lyon", "Nice"]}, trace("Paris"))
    assert not verdict.passed and "none of any_of matched" in verdict.reason


def test_fails_when_a_forbidden_string_is_present():
    verdict = judge({"none_of": ["London"]}, trace("London or Paris"))
    assert not verdict.passed and verdict.detail["forbidden_present"] == ["London"]


def test_without_all_of_uses_expected_answer_should_include():
    the_case = case(answer_should_include=["Paris"])
    assert judge({}, trace("It's paris."), the_case).passed
    verdict = judge({}, trace("It's Rome."), the_case)
    assert not verdict.passed and verdict.detail["missing"] == ["Paris"]


def test_without_none_of_uses_expected_answer_should_not_include():
    the_case = case(answer_should_not_include=["I don't know"])
    verdict = judge({}, trace("i don't know, sorry"), the_case)
    assert not verdict.passed and verdict.detail["forbidden_present"] == ["I don't know"]


def test_explicit_empty_lists_disable_the_fallback_to_expectations():
    the_case = case(answer_should_include=["Paris"], answer_should_not_include=["Rome"])
    assert judge({"all_of": [], "none_of": []}, trace("Rome"), the_case).passed


def test_explicit_all_of_replaces_the_expected_include_list():
    the_case = case(answer_should_include=["Paris"])
    assert judge({"all_of": ["Rome"]}, trace("Rome"), the_case).passed


def test_matching_is_case_insensitive_by_default():
    assert judge({"all_of": ["PARIS"]}, trace("paris")).passed


def test_case_sensitive_matching_when_asked():
    assert not judge({"all_of": ["Paris"], "case_sensitive": True}, trace("paris")).passed
    assert judge({"all_of": ["Paris"], "case_sensitive": True}, trace("Paris")).passed


def test_field_output_thinking_checks_the_reasoning_not_the_answer():
    config = {"field": "output.thinking", "all_of": ["step 2"]}
    verdict = judge(config, trace(answer="no steps here", thinking="step 1, step 2"))
    assert verdict.passed and verdict.detail["field"] == "output.thinking"
    assert not judge(config, trace(answer="step 2", thinking="step 1")).passed


def test_missing_field_is_treated_as_empty_text():
    assert not judge({"all_of": ["x"]}, trace(None)).passed
    assert judge({"none_of": ["x"]}, trace(None)).passed


def test_no_expectations_at_all_passes():
    assert judge({}, trace("anything")).passed


@pytest.mark.parametrize("config", [{"all_off": ["x"]}, {"case_sensitive": "maybe"}, {"any_of": "Paris"}])
def test_bad_config_is_rejected_by_the_config_model(config):
    with pytest.raises(ValidationError):
        ContainsText("mentions", "contains_text", config)
