"""A label's key: the judged content of a trace, blind to timestamps and latencies."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from evalh_pipeline.models import ToolCall, Trace, TraceMessage, TraceOutput, judged_content_hash


def _trace(start: datetime, answer: str = "Paris", latency: int = 10) -> Trace:
    call = ToolCall(name="lookup", arguments={"q": "capital"}, started_at=start)
    return Trace(run_id="r", case_id="case_1", variant_name="base", started_at=start,
                 finished_at=start + timedelta(milliseconds=latency), latency_ms=latency, case_hash="h1",
                 output=TraceOutput(final_answer=answer), tool_calls=[call],
                 messages=[TraceMessage(role="assistant", tool_call=call), TraceMessage(role="assistant", content=answer)])


def test_same_answer_at_another_time_hashes_the_same():
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert judged_content_hash(_trace(now)) == judged_content_hash(_trace(now + timedelta(days=3), latency=900))


def test_another_answer_or_case_hashes_differently():
    now = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert judged_content_hash(_trace(now)) != judged_content_hash(_trace(now, answer="Lyon"))
    other_case = _trace(now).model_copy(update={"case_hash": "h2"})
    assert judged_content_hash(_trace(now)) != judged_content_hash(other_case)
