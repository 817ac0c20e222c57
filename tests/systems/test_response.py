"""The one check of every adapter's answer (systems/response.py ``checked_response``): the
rules of TraceMetrics, whatever values an adapter set on its response, one by one and
unchecked, with the same result and the same message as validating the model's dump."""

from __future__ import annotations

import math
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from evalh_pipeline.models import TraceMetrics
from evalh_pipeline.systems.base import AdapterError, SystemResponse
from evalh_pipeline.systems.response import checked_response, malformed_response

_COUNTS = ("token_input", "token_output", "token_thinking", "latency_first_token_ms", "latency_last_token_ms",
           "stream_chunks")
_AMOUNTS = ("cost_usd", "cost_thinking_usd", "tokens_per_second")

_count = st.one_of(st.none(), st.integers(min_value=-10, max_value=2**60), st.floats(allow_nan=True),
                   st.text(max_size=5), st.booleans())
_amount = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**20),
                    st.text(max_size=5))
_custom = st.dictionaries(st.text(max_size=5), st.one_of(st.integers(), st.text(max_size=5),
                                                         st.lists(st.integers(), max_size=3)), max_size=3)


def _reference(metrics: TraceMetrics) -> TraceMetrics | str:
    """What the check gave before it validated the fields in place: the model's dump validated.
    (Dumping a mistyped field makes pydantic warn: the check no longer dumps; here it is the
    reference's noise, silenced for it alone.)"""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            dumped = metrics.model_dump()
        return TraceMetrics.model_validate(dumped)
    except ValidationError as exc:
        return str(malformed_response(exc, ("metrics",)))


@settings(max_examples=300, deadline=None)
@given(counts=st.fixed_dictionaries({name: _count for name in _COUNTS}),
       amounts=st.fixed_dictionaries({name: _amount for name in _AMOUNTS}),
       completed=st.one_of(st.none(), st.booleans(), st.text(max_size=3)), custom=_custom)
def test_checked_metrics_are_those_of_validating_the_dump(counts, amounts, completed, custom):
    response = SystemResponse()
    for name, value in {**counts, **amounts, "stream_completed": completed, "custom": custom}.items():
        setattr(response.metrics, name, value)  # as an adapter that fills its response field by field
    expected = _reference(response.metrics)
    try:
        checked = checked_response(response).metrics
    except AdapterError as exc:
        assert str(exc) == expected
        return
    assert isinstance(expected, TraceMetrics)
    assert checked.model_dump() == expected.model_dump()
    assert checked.__pydantic_fields_set__ == expected.__pydantic_fields_set__


def test_a_non_finite_cost_set_by_hand_errors_the_cell_naming_it():
    response = SystemResponse()
    response.metrics.cost_usd = math.inf
    with pytest.raises(AdapterError, match=r"^system returned a malformed response: metrics\.cost_usd: "):
        checked_response(response)


@pytest.mark.parametrize(("field", "value", "kept"), [
    ("latency_ms", 12.0, 12),
    ("latency_ms", "12", 12),
    ("started_at", "2026-01-02T03:04:05Z", None),
])
def test_timing_set_by_hand_is_coerced_as_the_model_coerces_it(field, value, kept):
    response = SystemResponse()
    setattr(response, field, value)
    checked = getattr(checked_response(response), field)
    assert checked == (kept if kept is not None else SystemResponse(**{field: value}).started_at)


@pytest.mark.parametrize(("field", "value"), [("latency_ms", 12.5), ("finished_at", "yesterday")])
def test_timing_the_model_refuses_errors_the_cell_naming_it(field, value):
    response = SystemResponse()
    setattr(response, field, value)
    with pytest.raises(AdapterError, match=rf"^system returned a malformed response: {field}: "):
        checked_response(response)
