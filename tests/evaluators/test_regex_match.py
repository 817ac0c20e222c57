"""regex_match: search / fullmatch, flags, must_match false, field paths, bad patterns at load."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.regex_match import RegexMatch
from evalh_pipeline.models import EvalCase, Trace, TraceOutput

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trace(answer: str | None = None, thinking: str | None = None, structured: dict | None = None) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 output=TraceOutput(final_answer=answer, thinking=thinking, structured=structured))


def judge(config: dict, the_trace: Trace):
    return asyncio.run(RegexMatch("pattern", "regex_match", config).evaluate(EvalCase(id="c1"), the_trace, None))


def test_passes_when_the_pattern_occurs_and_reports_the_match_and_span():
    verdict = judge({"pattern": r"\$\d+(\.\d+)?M"}, trace("The average is $1.2M in Richmond."))
    assert verdict.passed and verdict.score == 1.0
    assert verdict.detail["match"] == "$1.2M" and verdict.detail["span"] == [15, 20]
    assert verdict.detail["field"] == "output.final_answer" and verdict.detail["match_mode"] == "search"


def test_fails_when_the_pattern_does_not_occur():
    verdict = judge({"pattern": r"\d+"}, trace("no digits here"))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.reason == r"output.final_answer has no match for /\d+/"
    assert verdict.detail["matched"] is False and verdict.detail["match"] is None


def test_missing_field_is_empty_text_and_the_reason_says_so():
    verdict = judge({"pattern": "Paris"}, trace(None))
    assert not verdict.passed and "(the field is absent or empty)" in verdict.reason
    assert judge({"pattern": "Paris", "must_match": False}, trace(None)).passed


def test_must_match_false_fails_when_the_pattern_occurs():
    config = {"pattern": r"as an AI( language)? model", "must_match": False}
    verdict = judge(config, trace("Well, as an AI model I cannot say."))
    assert not verdict.passed
    assert "which it must not" in verdict.reason and "'as an AI model' at (6, 20)" in verdict.reason
    assert verdict.detail["match"] == "as an AI model"
    passing = judge(config, trace("Paris."))
    assert passing.passed and passing.reason.endswith("as required")


def test_fullmatch_needs_the_whole_text_to_match():
    config = {"pattern": r"[A-Z]{3}\d{3}", "match": "fullmatch"}
    assert judge(config, trace("ABC123")).passed
    verdict = judge(config, trace("Listing ABC123"))
    assert not verdict.passed and verdict.reason == r"output.final_answer does not fully match /[A-Z]{3}\d{3}/"
    assert judge({"pattern": "ABC", "match": "fullmatch", "must_match": False}, trace("ABC123")).passed


def test_flags_are_applied():
    assert not judge({"pattern": "paris"}, trace("PARIS")).passed
    assert judge({"pattern": "paris", "flags": ["ignorecase"]}, trace("PARIS")).passed
    assert judge({"pattern": "^Answer:", "flags": ["multiline"]}, trace("Thinking...\nAnswer: 4")).passed
    assert judge({"pattern": "start.*end", "flags": ["dotall"]}, trace("start\nend")).passed
    assert not judge({"pattern": "start.*end"}, trace("start\nend")).passed


def test_field_output_thinking_checks_the_reasoning_not_the_answer():
    config = {"pattern": r"step \d", "field": "output.thinking"}
    assert judge(config, trace(answer="42", thinking="step 1: add")).passed
    assert not judge(config, trace(answer="step 1", thinking=None)).passed


def test_non_text_fields_are_matched_as_text():
    assert judge({"pattern": r"^\d{4}$", "field": "output.structured.postcode"},
                 trace(structured={"postcode": 3121})).passed


def test_long_matches_are_shortened_in_detail_but_the_span_is_exact():
    verdict = judge({"pattern": "a+"}, trace("a" * 500))
    assert verdict.detail["span"] == [0, 500] and verdict.detail["match"] == "a" * 200 + "…"


def test_bad_regex_is_rejected_by_the_config_model_with_the_reason():
    with pytest.raises(ValidationError) as info:
        RegexMatch("pattern", "regex_match", {"pattern": "(unclosed"})
    (error,) = info.value.errors()
    assert error["loc"] == ("pattern",)
    assert "invalid regular expression /(unclosed/: missing ), unterminated subpattern at position 0" in error["msg"]


@pytest.mark.parametrize("config", [
    {},                                          # pattern is required
    {"pattern": "x", "flags": ["verbose"]},      # unsupported flag
    {"pattern": "x", "match": "prefix"},         # unknown mode
    {"pattern": "x", "field": ""},               # unparsable field path
    {"pattern": "x", "must_mach": False},        # unknown key
])
def test_bad_config_is_rejected_by_the_config_model(config):
    with pytest.raises(ValidationError):
        RegexMatch("pattern", "regex_match", config)
