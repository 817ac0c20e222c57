"""``trace.capture``: what each item keeps is what the load-time check believes it keeps.

``config.schema.CAPTURED_FIELDS`` tells the loader which trace fields an item covers (to
warn about evaluators that read a dropped one); ``apply_capture`` drops them. The two
must agree, field by field.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, get_args

import pytest

from evalh_pipeline.config.schema import CAPTURED_FIELDS, CaptureItem
from evalh_pipeline.common.fields import FieldPath
from evalh_pipeline.models import Trace
from evalh_pipeline.runner.capture import CAPTURE_ITEMS, apply_capture

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def full_trace() -> Trace:
    """A trace with every part a system can report set."""
    return Trace.model_validate({
        "run_id": "r", "case_id": "c", "variant_name": "v", "started_at": NOW, "finished_at": NOW, "latency_ms": 5,
        "output": {"final_answer": "a", "thinking": "t", "structured": {"k": 1}},
        "messages": [{"role": "assistant", "content": "a", "thinking": "mt"}],
        "tool_calls": [{"name": "search"}], "tool_results": [{"name": "search", "content": "r"}],
        "metrics": {"token_input": 1, "token_output": 2, "token_thinking": 3, "cost_usd": 0.1,
                    "cost_thinking_usd": 0.05, "latency_first_token_ms": 4, "latency_last_token_ms": 5,
                    "tokens_per_second": 6.0, "stream_chunks": 7, "stream_completed": True},
    })


def read(trace: Trace, field: str) -> Any:
    if field == "messages.thinking":
        return [m.thinking for m in trace.messages] or None
    return FieldPath(field).get(trace) or None


def test_the_table_names_every_item_the_schema_accepts():
    assert set(CAPTURED_FIELDS) == set(get_args(CaptureItem))


@pytest.mark.parametrize("item", CAPTURE_ITEMS)
def test_leaving_an_item_out_drops_exactly_the_fields_the_table_names(item):
    trace = full_trace()
    apply_capture(trace, [i for i in CAPTURE_ITEMS if i != item])
    listed = {f for fields in CAPTURED_FIELDS.values() for f in fields}
    dropped = {f for f in listed if read(trace, f) in (None, [None])}
    # A field under a dropped one goes with it (messages[].thinking with messages).
    assert dropped == {f for f in listed if any(f == g or f.startswith(g + ".") for g in CAPTURED_FIELDS[item])}
    assert dropped >= set(CAPTURED_FIELDS[item])
