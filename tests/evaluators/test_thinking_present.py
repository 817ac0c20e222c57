"""thinking_present: output.thinking text, min_chars, and the token-count-only allowance."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.thinking_present import ThinkingPresent
from evalh_pipeline.models import EvalCase, Trace, TraceMetrics, TraceOutput

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trace(thinking: str | None = None, token_thinking: int | None = None, answer: str | None = None) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 output=TraceOutput(final_answer=answer, thinking=thinking),
                 metrics=TraceMetrics(token_thinking=token_thinking))


def judge(config: dict, the_trace: Trace):
    evaluator = ThinkingPresent("reasons", "thinking_present", config)
    return asyncio.run(evaluator.evaluate(EvalCase(id="c1"), the_trace, None))


def test_passes_when_thinking_text_is_present():
    verdict = judge({}, trace("First find the suburb, then its average."))
    assert verdict.passed and verdict.score == 1.0
    assert verdict.reason == "output.thinking has 40 chars"
    assert verdict.detail["thinking_chars"] == 40 and verdict.detail["accepted_token_count_only"] is False


def test_fails_without_thinking_and_says_nothing_was_surfaced():
    verdict = judge({}, trace(None, answer="The answer, with no reasoning shown."))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason == ("output.thinking is empty and metrics.token_thinking is not set: "
                              "the system surfaced no thinking")


def test_whitespace_only_thinking_is_present_as_in_eval_harness():
    # eval-harness passes any non-empty string; so does evalh (min_chars counts whitespace).
    assert judge({}, trace("  \n\t ")).passed
    assert not judge({}, trace("")).passed


def test_the_final_answer_is_never_taken_for_thinking():
    assert not judge({}, trace(None, answer="<think>hmm</think> 4")).passed


def test_min_chars_requires_enough_text():
    verdict = judge({"min_chars": 20}, trace("hmm, ok"))
    assert not verdict.passed and verdict.reason == "output.thinking has 7 chars, fewer than min_chars 20"
    assert judge({"min_chars": 5}, trace("hmm, ok")).passed


def test_hidden_thinking_with_a_token_count_fails_by_default_and_says_how_to_accept_it():
    verdict = judge({}, trace(None, token_thinking=512))
    assert not verdict.passed
    assert "metrics.token_thinking is 512" in verdict.reason
    assert "set allow_token_count_only: true" in verdict.reason


def test_allow_token_count_only_accepts_a_positive_count_without_text():
    verdict = judge({"allow_token_count_only": True}, trace(None, token_thinking=512))
    assert verdict.passed and verdict.detail["accepted_token_count_only"] is True
    assert "the provider hides the text" in verdict.reason
    assert not judge({"allow_token_count_only": True}, trace(None, token_thinking=0)).passed
    assert not judge({"allow_token_count_only": True}, trace(None)).passed


def test_a_token_count_does_not_excuse_thinking_text_that_is_too_short():
    assert not judge({"allow_token_count_only": True, "min_chars": 50}, trace("ok", token_thinking=512)).passed


@pytest.mark.parametrize("config", [{"min_chars": 0}, {"min_chars": "long"}, {"allow_token_count_only": "maybe"},
                                    {"field": "output.final_answer"}])
def test_bad_config_is_rejected_by_the_config_model(config):
    with pytest.raises(ValidationError):
        ThinkingPresent("reasons", "thinking_present", config)
