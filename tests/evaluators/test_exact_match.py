"""exact_match: a trace field against a literal or a fact of the case."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from evalh_pipeline.evaluators.exact_match import ExactMatch
from evalh_pipeline.models import EvalCase, Trace, TraceOutput

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def trace(answer=None, structured=None) -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0,
                 output=TraceOutput(final_answer=answer, structured=structured))


def case(**facts) -> EvalCase:
    return EvalCase(id="c1", expected={"facts": facts})


def judge(config: dict, the_trace: Trace, the_case: EvalCase | None = None):
    evaluator = ExactMatch("right", "exact_match", config)
    return asyncio.run(evaluator.evaluate(the_case or case(), the_trace, None))


def test_passes_when_the_field_equals_the_literal():
    verdict = judge({"expected": "Paris"}, trace("Paris"))
    assert verdict.passed and verdict.detail == {"field": "output.final_answer", "actual": "Paris", "expected": "Paris"}


def test_fails_when_the_field_differs_and_says_both_values():
    verdict = judge({"expected": "Paris"}, trace("paris"))
    assert not verdict.passed and verdict.reason == "output.final_answer is 'paris', expected 'Paris'"


def test_expected_from_reads_a_path_into_expected_facts():
    the_case = case(city="Paris", address={"postcode": 75001})
    assert judge({"field": "output.structured.city", "expected_from": "city"},
                 trace(structured={"city": "Paris"}), the_case).passed
    assert judge({"field": "output.structured.zip", "expected_from": "address.postcode"},
                 trace(structured={"zip": 75001}), the_case).passed
    assert not judge({"field": "output.structured.city", "expected_from": "city"},
                     trace(structured={"city": "Rome"}), the_case).passed


def test_literal_expected_wins_over_expected_from():
    config = {"field": "output.structured.city", "expected": "Rome", "expected_from": "city"}
    verdict = judge(config, trace(structured={"city": "Rome"}), case(city="Paris"))
    assert verdict.passed and verdict.detail["expected"] == "Rome"


def test_explicit_null_literal_is_a_literal():
    assert judge({"expected": None, "expected_from": "city"}, trace(None), case(city="Paris")).passed


def test_missing_trace_field_fails_with_a_reason():
    verdict = judge({"field": "output.structured.city", "expected": "Paris"}, trace(structured=None))
    assert not verdict.passed and verdict.reason == "field 'output.structured.city' not present in the trace"


def test_missing_fact_fails_with_a_reason():
    verdict = judge({"expected_from": "country"}, trace("France"), case(city="Paris"))
    assert not verdict.passed and verdict.reason == "no expected value at expected.facts.country"


def test_values_are_compared_with_their_types():
    assert not judge({"field": "output.structured.n", "expected": "3"}, trace(structured={"n": 3})).passed
    assert judge({"field": "output.structured.n", "expected": 3}, trace(structured={"n": 3})).passed


def test_case_insensitive_and_strip_options_normalise_strings():
    assert judge({"expected": "paris", "case_sensitive": False, "strip": True}, trace("  PARIS\n")).passed
    assert not judge({"expected": "paris", "strip": True}, trace("  PARIS\n")).passed


@pytest.mark.parametrize("config", [{}, {"field": "output.final_answer"}, {"expected": 1, "bogus": True}])
def test_config_without_a_source_or_with_unknown_keys_is_rejected(config):
    with pytest.raises(ValidationError):
        ExactMatch("right", "exact_match", config)
