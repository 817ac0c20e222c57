"""Turn the dict a python function (or a CLI's JSON stdout) returns into a SystemResponse."""

from __future__ import annotations

from typing import Any

from evalh_pipeline.systems.base import AdapterError, SystemResponse

_METRIC_KEYS = (
    "token_input", "token_output", "token_thinking", "cost_usd", "cost_thinking_usd",
    "latency_first_token_ms", "latency_last_token_ms", "tokens_per_second", "stream_chunks",
    "stream_completed", "custom",
)


def response_from_dict(value: Any) -> SystemResponse:
    """Accept the flat shape (``final_answer``, ``tool_calls``, ...) or a Trace-shaped dict."""
    if not isinstance(value, dict):
        raise AdapterError(f"system returned {type(value).__name__}, expected a dict")
    output = value.get("output")
    if isinstance(output, dict):
        answer = output
    else:
        answer = {k: value.get(k) for k in ("final_answer", "thinking", "structured")}
    for key in ("final_answer", "thinking"):
        if answer.get(key) is not None and not isinstance(answer[key], str):
            answer = {**answer, key: str(answer[key])}
    tool_calls = [
        {**call, "arguments": call.get("arguments", call.get("input", {}))} if isinstance(call, dict) else call
        for call in value.get("tool_calls") or []
    ]
    metrics = {k: v for k, v in (value.get("metrics") or {}).items() if k in _METRIC_KEYS}
    try:
        return SystemResponse.model_validate(
            {
                "output": answer,
                "messages": value.get("messages") or [],
                "tool_calls": tool_calls,
                "tool_results": value.get("tool_results") or [],
                "metrics": metrics,
                "extra": value.get("extra") or {},
            }
        )
    except ValueError as exc:
        raise AdapterError(f"system returned a malformed response: {exc}") from None
