"""Turn the dict a python function (or a CLI's JSON stdout) returns into a SystemResponse,
and check every adapter's answer the same way before it becomes a trace."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from evalh_pipeline.models import TraceMetrics
from evalh_pipeline.systems.base import AdapterError, SystemResponse

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_METRIC_KEYS = frozenset((
    "token_input", "token_output", "token_thinking", "cost_usd", "cost_thinking_usd",
    "latency_first_token_ms", "latency_last_token_ms", "tokens_per_second", "stream_chunks",
    "stream_completed", "custom",
))


def response_from_dict(value: Any) -> SystemResponse:
    """Accept the flat shape (``final_answer``, ``tool_calls``, ...) or a Trace-shaped dict."""
    if not isinstance(value, dict):
        raise AdapterError(f"system returned {type(value).__name__}, expected a dict")
    output = value.get("output")
    if isinstance(output, dict):
        answer = output
    else:
        answer = {k: value.get(k) for k in ("final_answer", "thinking", "structured")}
    not_text: list[str] = []
    # Text answers (nearly all) skip the conversion: a call per cell saved.
    if not (_is_text(answer.get("final_answer")) and _is_text(answer.get("thinking"))):
        answer, not_text = _as_text(answer)
    # A call that has ``arguments`` is validated as it is (pydantic copies what it keeps);
    # only one with eval-harness's ``input`` instead needs a new dict.
    tool_calls = [
        {**call, "arguments": call.get("input", {})} if isinstance(call, dict) and "arguments" not in call else call
        for call in value.get("tool_calls") or []
    ]
    metrics = value.get("metrics") or {}
    if not _METRIC_KEYS.issuperset(metrics):  # keys of no metric are dropped (a copy only then)
        metrics = {k: v for k, v in metrics.items() if k in _METRIC_KEYS}
    try:
        response = SystemResponse.model_validate(
            {
                "output": answer,
                "messages": value.get("messages") or [],
                "tool_calls": tool_calls,
                "tool_results": value.get("tool_results") or [],
                "metrics": metrics,
                "extra": value.get("extra") or {},
            }
        )
    except ValidationError as exc:
        raise malformed_response(exc) from None
    if not_text:
        raise AdapterError(f"the system returned values JSON cannot hold, recorded as text: {', '.join(not_text)}",
                           type="unserializable_output", partial=response)
    return response


def checked_response(response: SystemResponse) -> SystemResponse:
    """``response`` once its metrics pass :class:`TraceMetrics`'s rules (types, counts within
    0..2**53, finite non-negative costs) and its timing fields :class:`SystemResponse`'s,
    whichever adapter built it and however (an adapter that sets fields one by one skips
    pydantic's checks); raises :class:`AdapterError` with the message a python function's
    malformed answer gets. The only check between an adapter's answer and its trace line."""
    try:
        # Its fields as they are now (an adapter may have set them one by one, unchecked):
        # the same values and errors as validating its model_dump(), without the copy.
        response.metrics = TraceMetrics.model_validate(response.metrics.__dict__)
    except ValidationError as exc:
        raise malformed_response(exc, ("metrics",)) from None
    started, finished, latency = response.started_at, response.finished_at, response.latency_ms
    if not (_is_time(started) and _is_time(finished) and (latency is None or type(latency) is int)):
        # Set by hand to something else: the model's rules (and coercions) for them. The trace
        # line holds these values as they are (runner/traces.py), so they are checked here.
        try:
            timing = SystemResponse.model_validate(
                {"started_at": started, "finished_at": finished, "latency_ms": latency})
        except ValidationError as exc:
            raise malformed_response(exc) from None
        response.started_at, response.finished_at = timing.started_at, timing.finished_at
        response.latency_ms = timing.latency_ms
    return response


def _is_time(value: Any) -> bool:
    return value is None or isinstance(value, datetime)


def malformed_response(exc: ValidationError, prefix: tuple[str, ...] = ()) -> AdapterError:
    """The one line a malformed answer gets: each bad field, what is allowed, what came."""
    problems = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in (*prefix, *error["loc"]))
        shown = repr(error["input"])
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        problems.append(f"{where}: {error['msg']} (got {shown})")
    return AdapterError(f"system returned a malformed response: {'; '.join(problems)}")


def _is_text(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _as_text(answer: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``final_answer`` and ``thinking`` as text, and the ones that are not text.

    A number, a boolean, or a list or dict of JSON values becomes its ``str`` (as
    eval-harness does, so its evals keep their verdicts). An object (``<Foo at 0x…>`` is no
    answer) is recorded as ``<unserializable Foo: …>`` and errors the cell, as the same
    object in ``structured`` does.
    """
    not_text: list[str] = []
    for key in ("final_answer", "thinking"):
        value = answer.get(key)
        if value is None or isinstance(value, str):
            continue
        from evalh_pipeline.store.recording import json_safe  # only for answers that are not text

        if isinstance(value, (bool, int, float)) or (isinstance(value, (list, dict)) and not json_safe(value)[1]):
            answer = {**answer, key: str(value)}
            continue
        placeholder, _ = json_safe({key: value})
        # A default repr's address (``at 0x7f…``) differs on every run and is no part of an answer.
        answer = {**answer, key: _ADDRESS.sub("", str(placeholder[key]))}
        not_text.append(f"output.{key} ({type(value).__name__})")
    return answer, not_text
