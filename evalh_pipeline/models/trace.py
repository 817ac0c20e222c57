"""Trace and its parts: what happened during one (case x variant x sample) cell."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalh_pipeline.models.versioning import SCHEMA_VERSION


class ToolCall(BaseModel):
    """A tool invocation requested by the system."""

    id: str | None = None
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    started_at: datetime | None = None


class ToolResult(BaseModel):
    """What a tool returned to the system."""

    tool_call_id: str | None = None
    name: str
    content: dict[str, Any] | str


class TraceMessage(BaseModel):
    """One turn of the conversation, including tool turns."""

    role: str
    content: str | dict[str, Any] | list[Any] | None = None
    thinking: str | None = None
    tool_call: ToolCall | None = None
    name: str | None = None


class TraceOutput(BaseModel):
    """The user-facing answer, the reasoning (never concatenated) and structured output."""

    final_answer: str | None = None
    thinking: str | None = None
    structured: dict[str, Any] | None = None


# Counts above 2**53 are not exact in JSON readers (DuckDB sums them as doubles, JavaScript
# reads them as doubles); no real system reports that many tokens.
MAX_COUNT = 2**53


def _count() -> Any:
    return Field(default=None, ge=0, le=MAX_COUNT)


def _amount() -> Any:
    return Field(default=None, ge=0, allow_inf_nan=False)


class TraceMetrics(BaseModel):
    """Tokens, cost and streaming figures; ``custom`` holds free-form overflow.

    Validated where a system's report enters (a count between 0 and 2**53, a finite
    non-negative cost or rate): a system that reports ``token_input: 10**30`` errors its
    own cell instead of making the run unreadable.
    """

    token_input: int | None = _count()
    token_output: int | None = _count()
    token_thinking: int | None = _count()
    cost_usd: float | None = _amount()
    cost_thinking_usd: float | None = _amount()
    latency_first_token_ms: int | None = _count()
    latency_last_token_ms: int | None = _count()
    tokens_per_second: float | None = _amount()
    stream_chunks: int | None = _count()
    stream_completed: bool | None = None
    custom: dict[str, Any] = Field(default_factory=dict)


# The error types evalh records (ERROR_TYPES); plugins may record their own, so the field is
# any text. rate_limited: the provider still answered with rate limits when the cell's (or
# judge's) time ran out, or the run gave up on the limit (run.rate_limits.budget_seconds).
# judge_unreachable / judge_error: a result whose judge could not answer (models/result.py).
ERROR_TYPES = ("timeout", "http_5xx", "rate_limited", "adapter_error", "exception", "cost_limit", "config_error",
               "workspace_error", "sandbox_limit", "unserializable_output", "judge_unreachable", "judge_error")


class TraceError(BaseModel):
    """Why a cell (or an evaluator) failed: one of ``ERROR_TYPES`` (timeout, http_5xx,
    rate_limited, adapter_error, exception, cost_limit, ...) or a plugin's own type."""

    type: str = Field(description="timeout | http_5xx | rate_limited | adapter_error | exception | cost_limit | "
                                  "config_error | workspace_error | sandbox_limit | unserializable_output, or a "
                                  "plugin's own", examples=list(ERROR_TYPES))
    message: str
    stack: str | None = None


class CellRecord(BaseModel):
    """What every record about one cell starts with: which run, case, variant and sample.

    ``sample`` numbers repeats of a cell when ``run.samples_per_case`` > 1 (additive in 1.x).
    Subclasses add their fields after these, so every line starts with the same keys.
    """

    model_config = ConfigDict(extra="allow")

    schema_version: str = SCHEMA_VERSION
    run_id: str
    case_id: str
    variant_name: str
    sample: int = 0


class Trace(CellRecord):
    """The record of one cell. Written once, before any evaluator runs.

    Invariants (enforced by the runner, not the adapters): timestamps are always set,
    ``latency_ms`` is computed from them, and ``error`` is set iff the adapter raised.

    ``case_hash``, ``variant_hash`` and ``fixture_hash`` (runner/hashes.py) say what the
    trace was made from; a later run reuses it (``reused_from``: the run it was first made
    in) only while all three are unchanged. None in traces written before they existed.

    ``trace_hash`` is the hash of the trace's own line without it (store/records.py
    ``TRACES.content_hash``): results record the trace_hash they judged, and a result is
    current only while its trace still has that hash. It is always the last field; readers
    compute it from the line (traces written before it existed have none).
    """

    started_at: datetime
    finished_at: datetime
    latency_ms: int

    input: dict[str, Any] = Field(default_factory=dict)
    output: TraceOutput = Field(default_factory=TraceOutput)

    messages: list[TraceMessage] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)

    metrics: TraceMetrics = Field(default_factory=TraceMetrics)
    error: TraceError | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    case_hash: str | None = None
    variant_hash: str | None = None
    fixture_hash: str | None = None
    reused_from: str | None = None
    trace_hash: str | None = None
