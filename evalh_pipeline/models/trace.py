"""Trace and its parts: what happened during one (case x variant x sample) cell."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalh_pipeline.models.versioning import SCHEMA_VERSION


class ToolCall(BaseModel):
    """A tool invocation requested by the system."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    id: str | None = None
    """The call's id, as the system gave it (tool results refer to it)."""
    name: str
    """The tool's name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The arguments the system passed."""
    started_at: datetime | None = None
    """When the call was made, if the system said."""


class ToolResult(BaseModel):
    """What a tool returned to the system."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    tool_call_id: str | None = None
    """The id of the call this answers."""
    name: str
    """The tool's name."""
    content: dict[str, Any] | str
    """What the tool returned."""


class TraceMessage(BaseModel):
    """One turn of the conversation, including tool turns."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    role: str
    """`system`, `user`, `assistant`, `tool`, or the system's own role name."""
    content: str | dict[str, Any] | list[Any] | None = None
    """The turn's content: text, or the structured content the system gave."""
    thinking: str | None = None
    """The turn's reasoning, kept apart from its content."""
    tool_call: ToolCall | None = None
    """The tool call this turn made, if any."""
    name: str | None = None
    """The tool's or speaker's name, where the protocol has one."""


class TraceOutput(BaseModel):
    """The user-facing answer, the reasoning (never concatenated) and structured output."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    final_answer: str | None = None
    """The answer a user would see."""
    thinking: str | None = None
    """The system's reasoning, never concatenated into the answer."""
    structured: dict[str, Any] | None = None
    """Structured output (a JSON object), if the system gave one."""


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

    model_config = ConfigDict(use_attribute_docstrings=True)

    token_input: int | None = _count()
    """Input (prompt) tokens."""
    token_output: int | None = _count()
    """Output tokens, thinking tokens included when the provider counts them so."""
    token_thinking: int | None = _count()
    """Thinking (reasoning) tokens."""
    cost_usd: float | None = _amount()
    """The cell's cost in US dollars: as the system reported it, else priced from its tokens."""
    cost_thinking_usd: float | None = _amount()
    """The part of the cost spent on thinking tokens."""
    latency_first_token_ms: int | None = _count()
    """Streaming: milliseconds from the request to the first token."""
    latency_last_token_ms: int | None = _count()
    """Streaming: milliseconds from the request to the last token."""
    tokens_per_second: float | None = _amount()
    """Streaming: output tokens per second between the first and last token."""
    stream_chunks: int | None = _count()
    """Streaming: chunks received."""
    stream_completed: bool | None = None
    """Streaming: whether the stream ended with its end marker (false: cut short)."""
    custom: dict[str, Any] = Field(default_factory=dict)
    """The system's own metrics, by name."""


# The error types evalh records (ERROR_TYPES); plugins may record their own, so the field is
# any text. rate_limited: the provider still answered with rate limits when the cell's (or
# judge's) time ran out, or the run gave up on the limit (run.rate_limits.budget_seconds).
# judge_unreachable / judge_error: a result whose judge could not answer (models/result.py).
ERROR_TYPES = ("timeout", "http_5xx", "rate_limited", "adapter_error", "exception", "cost_limit", "config_error",
               "workspace_error", "sandbox_limit", "unserializable_output", "judge_unreachable", "judge_error")


class TraceError(BaseModel):
    """Why a cell (or an evaluator) failed: one of ``ERROR_TYPES`` (timeout, http_5xx,
    rate_limited, adapter_error, exception, cost_limit, ...) or a plugin's own type."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    type: str = Field(description="timeout | http_5xx | rate_limited | adapter_error | exception | cost_limit | "
                                  "config_error | workspace_error | sandbox_limit | unserializable_output, or a "
                                  "plugin's own", examples=list(ERROR_TYPES))
    message: str
    """What went wrong, in one line (secrets masked)."""
    stack: str | None = None
    """The traceback, when an exception was raised."""


class CellRecord(BaseModel):
    """What every record about one cell starts with: which run, case, variant and sample.

    ``sample`` numbers repeats of a cell when ``run.samples_per_case`` > 1 (additive in 1.x).
    Subclasses add their fields after these, so every line starts with the same keys.
    """

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    schema_version: str = SCHEMA_VERSION
    """The record format's version (additive within 1.x)."""
    run_id: str
    """The run the record belongs to (`<timestamp>_<eval name>`)."""
    case_id: str
    """The case's id."""
    variant_name: str
    """The variant (system) name."""
    sample: int = 0
    """Which repeat of the cell (0 unless `run.samples_per_case` > 1)."""


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
    """When the cell started (always set, even on error)."""
    finished_at: datetime
    """When the cell finished (always set, even on error)."""
    latency_ms: int
    """`finished_at - started_at` in milliseconds, computed by the runner."""

    input: dict[str, Any] = Field(default_factory=dict)
    """The case's input, as the system received it."""
    output: TraceOutput = Field(default_factory=TraceOutput)
    """The system's answer."""

    messages: list[TraceMessage] = Field(default_factory=list)
    """The conversation, tool turns included."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Every tool call the system made."""
    tool_results: list[ToolResult] = Field(default_factory=list)
    """What each tool returned."""

    metrics: TraceMetrics = Field(default_factory=TraceMetrics)
    """Tokens, cost and streaming figures."""
    error: TraceError | None = None
    """Why the cell failed; set if and only if the system raised or the cell was stopped."""
    extra: dict[str, Any] = Field(default_factory=dict)
    """Adapter-specific overflow (`trace_id` of an upstream platform, `enrichment_errors`, `executor`:
    where the cell ran).
    """

    case_hash: str | None = None
    """The hash of the case the trace was made from."""
    variant_hash: str | None = None
    """The hash of the variant's config."""
    fixture_hash: str | None = None
    """The hash of the fixture files the variant read."""
    reused_from: str | None = None
    """The run this trace was first made in, when reused unchanged (`--reuse`)."""
    trace_hash: str | None = None
    """The hash of this line without this field: results record the trace they judged by it."""
