"""thinking_does_not_leak: forbidden text or regexes in the thinking, never in the answer's place."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.thinking_does_not_leak import ThinkingDoesNotLeak
from evalh_pipeline.models import EvalCase, Trace, TraceMessage, TraceOutput

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trace(thinking: str | None = None, answer: str = "The average is $1.2M.", turns: list[str] = ()) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 output=TraceOutput(final_answer=answer, thinking=thinking),
                 messages=[TraceMessage(role="assistant", thinking=t) for t in turns])


def judge(config: dict, the_trace: Trace):
    return asyncio.run(ThinkingDoesNotLeak("no_leak", "thinking_does_not_leak", config).evaluate(
        EvalCase(id="c1"), the_trace, None))


def test_passes_when_no_forbidden_pattern_is_in_the_thinking():
    verdict = judge({"forbidden": ["system prompt", r"re:sk-[A-Za-z0-9]{8,}"]},
                    trace("Look up the suburb average, then compare."))
    assert verdict.passed and verdict.detail["leaked"] == {}


def test_fails_on_plain_text_case_insensitively_and_on_regexes():
    verdict = judge({"forbidden": ["system prompt", r"re:sk-[A-Za-z0-9]{8,}"]},
                    trace("My SYSTEM PROMPT says to use key sk-abcdefgh1234."))
    assert not verdict.passed and verdict.score == 0.0
    assert verdict.detail["leaked"] == {"system prompt": "SYSTEM PROMPT", r"re:sk-[A-Za-z0-9]{8,}": "sk-abcdefgh1234"}


def test_per_turn_thinking_is_checked_too():
    verdict = judge({"forbidden": ["password"]}, trace(None, turns=["first", "the password is hunter2"]))
    assert not verdict.passed


def test_the_answer_is_not_what_is_checked():
    verdict = judge({"forbidden": ["average"]}, trace("Compute it."))
    assert verdict.passed


def test_no_thinking_passes_and_says_so():
    verdict = judge({"forbidden": ["x"]}, trace(None))
    assert verdict.passed and verdict.detail == {"thinking_present": False}
    assert "no thinking" in verdict.reason


def test_case_sensitive_plain_text():
    assert judge({"forbidden": ["Secret"], "case_sensitive": True}, trace("a secret plan")).passed


@pytest.mark.parametrize("config, message", [
    ({"forbidden": []}, "give forbidden patterns, a judge block, or both"),
    ({"forbidden": ["re:(unclosed"]}, "invalid regular expression"),
    ({"forbidden": [""]}, "empty forbidden pattern"),
    ({"forbidden": ["x"], "assertions": ["no leaks"]}, "Extra inputs are not permitted"),
])
def test_bad_config_is_rejected(config, message):
    with pytest.raises(ValidationError, match=message):
        ThinkingDoesNotLeak("no_leak", "thinking_does_not_leak", config)
