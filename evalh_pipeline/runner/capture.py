"""``trace.capture``: which parts of each trace are kept (Filesystem.md's "Case A").

    trace:
      capture: [final_answer, tool_calls, tool_results, messages, latency, tokens]

Without the key (or with an empty list) everything the system reported is kept. With it,
the parts not listed are dropped before the trace is persisted, so they never reach the
run directory, the stores or the evaluators (a way to keep, say, message bodies out of a
shared store). Timestamps, ``latency_ms``, ``error`` and ``extra`` are always kept: they
are the runner's invariants and its bookkeeping, not the system's output.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalh_pipeline.config.schema import CAPTURED_FIELDS
from evalh_pipeline.models import Trace

# The items, in the order the docs list them. What each keeps is CAPTURED_FIELDS (which the
# loader reads to warn about an evaluator reading a dropped field); apply_capture drops
# exactly those fields (tests/runner/test_capture.py). `latency` is always kept.
CAPTURE_ITEMS = tuple(CAPTURED_FIELDS)


def apply_capture(trace: Trace, capture: Sequence[str]) -> None:
    """Drop the parts of ``trace`` that ``capture`` does not list (no-op for an empty list)."""
    if not capture:
        return
    keep = set(capture)
    if "final_answer" not in keep:
        trace.output.final_answer = None
    if "thinking" not in keep:
        trace.output.thinking = None
        for message in trace.messages:
            message.thinking = None
    if "structured" not in keep:
        trace.output.structured = None
    if "messages" not in keep:
        trace.messages = []
    if "tool_calls" not in keep:
        trace.tool_calls = []
    if "tool_results" not in keep:
        trace.tool_results = []
    metrics = trace.metrics
    if "tokens" not in keep:
        metrics.token_input = metrics.token_output = metrics.token_thinking = None
    if "cost" not in keep:
        metrics.cost_usd = metrics.cost_thinking_usd = None
    if "streaming" not in keep:
        metrics.latency_first_token_ms = metrics.latency_last_token_ms = None
        metrics.tokens_per_second = None
        metrics.stream_chunks = None
        metrics.stream_completed = None
