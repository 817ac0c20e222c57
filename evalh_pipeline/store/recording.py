"""What a cell records: its trace as one JSON line, always serializable and of bounded size.

A system under test may return anything: an object JSON cannot hold, a lone surrogate, a
100 MB answer. None of that may crash the run or make the run unreadable later, so the
line is made here, inside the cell:

- Serializable: a value JSON cannot hold is recorded as text (``<unserializable Foo: ...>``,
  a lone surrogate as its ``\\udcXX`` escape, a non-finite float as null, a non-string key
  as its ``str``) and the cell errors (``unserializable_output``), naming the fields. In an
  evaluation result a lone surrogate is a file name that is not UTF-8 (workspaces allow
  them): escaped and noted in ``detail.escaped``, not an error.
- Bounded: any text longer than :data:`MAX_TEXT_CHARS` is cut to that, and if the whole
  record is still over :data:`MAX_TRACE_BYTES`, the longest texts and lists are cut
  further; ``extra.truncated`` lists each cut with its original size. Readers
  (DuckDB, ``inspect``, ``compare``) accept records up to 16 MiB.

The fast path (a normal trace) is one serialization and a length check. A cell hands its
trace over as a :data:`TraceRecord` (:func:`record_line`): the Trace's fields, encoded
without building the model; only a record that fails the fast path becomes a ``Trace``.
"""

from __future__ import annotations

import math
from datetime import date, datetime
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from evalh_pipeline.models import EvaluationResult, Trace, TraceError, TraceOutput

# Longest text (characters) kept in any one field of a trace; the rest is cut and noted.
MAX_TEXT_CHARS = 1_000_000
# Largest trace line (bytes, UTF-8); well under the 16 MiB readers accept.
MAX_TRACE_BYTES = 8 * 1024 * 1024
# Deepest nesting recorded; deeper values are replaced by a marker.
MAX_DEPTH = 64
_SMALLEST_TEXT = 256
_SMALLEST_LIST = 16
# JSON readers (DuckDB's BIGINT, JavaScript) hold integers up to 2**63 - 1 at most.
_MAX_INT = 2**63 - 1


class _Problems:
    def __init__(self) -> None:
        self.unserializable: list[str] = []
        self.escaped: list[str] = []  # lone surrogates, kept as their \udcXX escape
        self.truncated: list[dict[str, Any]] = []


def trace_line(trace: Trace) -> tuple[bytes, Trace]:
    """The trace's JSON line (UTF-8, no newline) and the trace as recorded (the same object
    when nothing changed)."""
    try:
        # The model's own serializer, as model_dump_json calls it, minus the str in between:
        # the line is written, hashed and masked as bytes.
        line = trace.__pydantic_serializer__.to_json(trace)
    except (PydanticSerializationError, ValueError, TypeError, RecursionError):
        line = None
    if line is not None and len(line) <= MAX_TRACE_BYTES and not _long_text(trace):
        return line, trace
    problems = _Problems()
    # Field by field rather than model_dump: that raises on a circular structure too.
    data = _json_safe(trace, "", problems, 0)
    data = _bounded(data, problems, MAX_TRACE_BYTES)
    extra = data.setdefault("extra", {})
    if problems.truncated:
        extra["truncated"] = problems.truncated
    # In a trace, a lone surrogate is the system's error (its answer is not text); in a result
    # it is a file name that is not UTF-8, which workspaces support: escaped, not an error.
    unserializable = problems.unserializable + problems.escaped
    if unserializable:
        fields = ", ".join(unserializable[:10])
        more = f" and {len(unserializable) - 10} more" if len(unserializable) > 10 else ""
        problem = TraceError(type="unserializable_output",
                             message=f"the system returned values JSON cannot hold, recorded as text: {fields}{more}")
        if data.get("error") is None:
            data["error"] = problem.model_dump()
        else:
            extra["unserializable_output"] = problem.message
    recorded = Trace.model_validate(data)
    return recorded.__pydantic_serializer__.to_json(recorded), recorded


# A trace as plain fields: every field of Trace, in its order, each value exactly as a Trace
# holds it (the checked response's models, aware datetimes, ...). What a cell makes; its line
# is the line the Trace of the same fields encodes to, byte for byte.
TraceRecord = dict[str, Any]


def record_line(record: TraceRecord) -> tuple[bytes, TraceError | None]:
    """The JSON line (UTF-8, no newline) of the trace ``record`` holds, and that trace's error:
    one encoding of the plain fields; a record JSON cannot hold, or too large, is recorded as
    :func:`trace_line` records its Trace."""
    try:
        line = to_json(record, inf_nan_mode="null")  # as the model: a non-finite float is null
    except (PydanticSerializationError, ValueError, TypeError, RecursionError):
        line = None
    output = record["output"]
    if line is not None and len(line) <= MAX_TRACE_BYTES and not _long_output(output):
        return line, record["error"]
    line, trace = trace_line(Trace.model_validate(record))
    return line, trace.error


def result_line(result: EvaluationResult) -> str:
    """An evaluation result's JSON line, made serializable and bounded like a trace's."""
    try:
        line = result.model_dump_json()
        if len(line) <= MAX_TEXT_CHARS:
            return line
    except (PydanticSerializationError, ValueError, TypeError, RecursionError):
        pass
    problems = _Problems()
    data = _bounded(_json_safe(result, "", problems, 0), problems, MAX_TRACE_BYTES)
    if problems.unserializable and data.get("error") is None:
        data["passed"] = False
        data["error"] = {"type": "unserializable_result",
                         "message": "the evaluator's result held values JSON cannot hold: "
                                    + ", ".join(problems.unserializable[:10])}
    if problems.truncated or problems.escaped:
        found = data.get("detail")
        detail: dict[str, Any] = found if isinstance(found, dict) else {}
        notes: dict[str, Any] = {"truncated": problems.truncated} if problems.truncated else {}
        if problems.escaped:
            notes["escaped"] = problems.escaped[:10]
        data["detail"] = {**detail, **notes}
    try:
        return EvaluationResult.model_validate(data).model_dump_json()
    except ValidationError:  # the shape itself was broken: keep the verdict's identity only
        return EvaluationResult.model_validate({**data, "detail": {}, "reason": str(data.get("reason"))[:1000]}) \
            .model_dump_json()


def json_safe(value: Any) -> tuple[Any, list[str]]:
    """``value`` (a model, or plain data) as JSON types, and what could not be kept as it was."""
    problems = _Problems()
    data = _json_safe(value, "", problems, 0)
    return data, problems.unserializable + problems.escaped


def _long_text(trace: Trace) -> bool:
    """True when a top-level text of the trace is over the per-text cap (cheap checks only)."""
    return _long_output(trace.output)


def _long_output(output: TraceOutput) -> bool:
    return any(len(text) > MAX_TEXT_CHARS for text in (output.final_answer, output.thinking) if text)


def _json_safe(value: Any, path: str, problems: _Problems, depth: int) -> Any:
    """``value`` as plain JSON types; what JSON cannot hold becomes text and is noted at ``path``."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            problems.escaped.append(f"{path or '.'} (lone surrogate)")
            value = value.encode("utf-8", "backslashreplace").decode("utf-8")
        if len(value) > MAX_TEXT_CHARS:
            problems.truncated.append({"path": path, "original_chars": len(value), "kept_chars": MAX_TEXT_CHARS})
            value = value[:MAX_TEXT_CHARS]
        return value
    if isinstance(value, int):
        if -_MAX_INT - 1 <= value <= _MAX_INT:
            return value
        problems.unserializable.append(f"{path} (integer out of range)")
        try:
            return str(value)
        except ValueError:  # more digits than Python converts
            return "<integer too large to write>"
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        problems.unserializable.append(f"{path} (non-finite number)")
        return None
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if depth >= MAX_DEPTH:
        problems.unserializable.append(f"{path} (nested deeper than {MAX_DEPTH})")
        return f"<nested deeper than {MAX_DEPTH}>"
    if isinstance(value, BaseModel):
        value = dict(value)  # its fields and extra keys, values as they are
    if isinstance(value, dict):
        safe: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                problems.unserializable.append(f"{path}.{key!r} (non-string key)")
                key = str(key)
            key = _json_safe(key, f"{path}.<key>", problems, depth + 1)
            safe[key] = _json_safe(item, f"{path}.{key}" if path else key, problems, depth + 1)
        return safe
    if isinstance(value, (list, tuple)):
        return [_json_safe(item, f"{path}[{i}]", problems, depth + 1) for i, item in enumerate(value)]
    kind = type(value).__name__
    problems.unserializable.append(f"{path} ({kind})")
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a repr that raises is one more thing the system got wrong
        text = "?"
    return f"<unserializable {kind}: {text[:200]}>"


def _bounded(data: dict[str, Any], problems: _Problems, limit: int) -> dict[str, Any]:
    """Cut the longest texts, then the longest lists, until the record fits in ``limit`` bytes."""
    import json

    text_cap, list_cap = MAX_TEXT_CHARS, None
    while len(json.dumps(data, ensure_ascii=False).encode("utf-8")) > limit:
        if text_cap > _SMALLEST_TEXT:
            text_cap //= 4
            data = _cut(data, "", problems, text_cap, None)
        elif list_cap is None or list_cap > _SMALLEST_LIST:
            list_cap = 1024 if list_cap is None else list_cap // 4
            data = _cut(data, "", problems, None, list_cap)
        else:  # many small keys: nothing sensible is left to cut item by item
            for key in ("input", "output", "messages", "tool_calls", "tool_results", "extra"):
                if key in data:
                    problems.truncated.append({"path": key, "original_chars": len(json.dumps(data[key])),
                                               "kept_chars": 0})
                    data[key] = [] if isinstance(data[key], list) else {}
            break
    return data


def _cut(value: Any, path: str, problems: _Problems, text_cap: int | None, list_cap: int | None) -> Any:
    if isinstance(value, str) and text_cap is not None and len(value) > text_cap:
        problems.truncated.append({"path": path, "original_chars": len(value), "kept_chars": text_cap})
        return value[:text_cap]
    if isinstance(value, dict):
        return {k: _cut(v, f"{path}.{k}" if path else k, problems, text_cap, list_cap) for k, v in value.items()}
    if isinstance(value, list):
        if list_cap is not None and len(value) > list_cap:
            problems.truncated.append({"path": path, "original_items": len(value), "kept_items": list_cap})
            value = value[:list_cap]
        return [_cut(v, f"{path}[{i}]", problems, text_cap, list_cap) for i, v in enumerate(value)]
    return value
