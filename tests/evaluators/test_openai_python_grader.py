"""openai_python_grader runs a hosted OpenAI Evals python grader's ``grade(sample, item)`` as the
graders guide defines it (https://platform.openai.com/docs/guides/graders, "Python graders"):
``sample["output_text"]`` is the answer, ``item`` the datasource item, a pass is a score of at
least ``pass_threshold``."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest

from evalh_pipeline.evaluators.openai_python_grader import OpenAIPythonGrader
from evalh_pipeline.models import EvalCase, Trace, TraceOutput

pytestmark = pytest.mark.integration  # the grader runs in a child Python process

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
SOURCE = ("def grade(sample, item) -> float:\n"
          "    words = sample['output_text'].lower().split()\n"
          "    return sum(w.strip('.,') == item['answer'].lower() for w in words) / max(len(words), 1)\n")


def _grade(answer: str, source: str = SOURCE, threshold: float = 0.5):
    grader = OpenAIPythonGrader("py", "openai_python_grader",
                                {"source": source, "item": {"answer": "Paris"}, "pass_threshold": threshold})
    trace = Trace(run_id="r", case_id="c", variant_name="v", started_at=T0, finished_at=T0, latency_ms=1,
                  output=TraceOutput(final_answer=answer))
    return asyncio.run(grader.evaluate(EvalCase(id="c"), trace, None))


def test_the_score_against_pass_threshold_decides():
    assert _grade("Paris.").passed and _grade("Paris.").score == 1.0
    verdict = _grade("It is Paris, I think")  # 1 of 5 words: 0.2
    assert not verdict.passed and verdict.score == pytest.approx(0.2)
    assert _grade("It is Paris, I think", threshold=0.2).passed  # at the threshold passes


def test_output_json_is_there_when_the_answer_is_json_and_errors_fail():
    source = "def grade(sample, item):\n    return float(sample['output_json']['city'] == item['answer'])\n"
    assert _grade('{"city": "Paris"}', source).passed
    failed = _grade("not json", source)  # KeyError in the grader
    assert not failed.passed and failed.reason.startswith("python grader failed: KeyError")
    assert not _grade("x", "def grade(sample, item):\n    return 'yes'\n").passed  # not a number
