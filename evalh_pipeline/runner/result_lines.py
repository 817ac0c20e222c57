"""One evaluator's judgement of one trace, as an EvaluationResult or as its results.jsonl line.

Re-evaluation writes hundreds of thousands of lines; validating an EvaluationResult only
to serialise it again costs more than judging. :func:`result_lines` encodes well-typed
verdicts with the record codec's fast path (byte-identical to the model's own JSON) and
builds the model for anything else.
"""

from __future__ import annotations

import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from pydantic_core import PydanticSerializationError

from evalh_pipeline.evaluators.base import Evaluator, Verdict
from evalh_pipeline.models import EvaluationResult, Trace, TraceError
from evalh_pipeline.models.versioning import SCHEMA_VERSION
from evalh_pipeline.common.masking import mask_json_line
from evalh_pipeline.store.records import RESULTS


@dataclass(slots=True)
class Judged:
    """What one evaluator said about one trace, and when it ran."""

    evaluator: Evaluator
    verdict: Verdict
    error: TraceError | None
    started: datetime
    finished: datetime


def raised(evaluator: Evaluator, exc: Exception) -> tuple[Verdict, TraceError]:
    """The failing verdict and error recorded when ``evaluator`` raised ``exc``."""
    verdict = Verdict(False, f"evaluator {evaluator.name!r} raised {type(exc).__name__}: {exc}")
    # An error that names its type (a judge still rate limited: ``rate_limited``) keeps it.
    kind = getattr(exc, "error_type", "exception")
    error = TraceError(type=kind if isinstance(kind, str) else "exception", message=f"{type(exc).__name__}: {exc}",
                       stack=traceback.format_exc(limit=20))
    return verdict, error


def build_result(trace: Trace, judged: Judged, trace_hash: str | None = None) -> EvaluationResult:
    """The EvaluationResult of ``judged`` (validated); ``trace_hash``: of the trace's line
    (default: the trace's own ``trace_hash``)."""
    verdict, error = judged.verdict, judged.error
    return EvaluationResult(
        run_id=trace.run_id,
        case_id=trace.case_id,
        variant_name=trace.variant_name,
        sample=trace.sample,
        evaluator=judged.evaluator.name,
        evaluator_type=judged.evaluator.type_name,
        passed=verdict.passed and error is None,
        score=verdict.score,
        reason=verdict.reason,
        detail=verdict.detail,
        started_at=judged.started,
        finished_at=judged.finished,
        latency_ms=round((judged.finished - judged.started).total_seconds() * 1000),
        error=error,
        evaluator_hash=getattr(judged.evaluator, "config_hash", None),
        trace_hash=trace_hash if trace_hash is not None else getattr(trace, "trace_hash", None),
    )


def secrets_of(evaluators: Iterable[Evaluator]) -> frozenset[str]:
    """The secret values known to ``evaluators`` (their ``context.secret_values``)."""
    return frozenset().union(*(getattr(getattr(e, "context", None), "secret_values", ()) for e in evaluators))


def result_lines(trace: Trace, judged: list[Judged], secrets: frozenset[str] | None = None,
                 trace_hash: str | None = None) -> bytes:
    """``build_result(trace, j).model_dump_json()`` of each of ``judged``, one line each, as bytes, but faster.

    Known secrets (the evaluators' ``context.secret_values``, or ``secrets`` when the caller
    collected them once for many traces: :func:`secrets_of`) are masked in the lines.
    """
    return b"".join(result_line_list(trace, judged, secrets, trace_hash))


def result_line_list(trace: Trace, judged: list[Judged], secrets: frozenset[str] | None = None,
                     trace_hash: str | None = None) -> list[bytes]:
    """The lines of :func:`result_lines`, one per judgement, in order; each records
    ``trace_hash`` (the hash of the trace's line: default, the trace's own)."""
    if trace_hash is None:
        trace_hash = getattr(trace, "trace_hash", None)
    lines = []
    for j in judged:
        verdict = j.verdict
        score = verdict.score
        if not (
            j.error is None
            and type(verdict.passed) is bool
            and type(verdict.reason) is str
            and type(verdict.detail) is dict
            and (score is None or type(score) is float)
        ):
            # Values the model would coerce (an int score, a truthy passed) or reject: let it.
            lines.append(_safe_line(trace, j, trace_hash))
            continue
        try:
            # Every field in the model's order: encode_values then merges nothing.
            line = RESULTS.encode_values({
                "schema_version": SCHEMA_VERSION,
                "run_id": trace.run_id,
                "case_id": trace.case_id,
                "variant_name": trace.variant_name,
                "sample": trace.sample,
                "evaluator": j.evaluator.name,
                "evaluator_type": j.evaluator.type_name,
                "passed": verdict.passed,
                "score": score,
                "reason": verdict.reason,
                "detail": verdict.detail,
                "started_at": j.started,
                "finished_at": j.finished,
                "latency_ms": round((j.finished - j.started).total_seconds() * 1000),
                "error": None,
                "evaluator_hash": getattr(j.evaluator, "config_hash", None),
                "trace_hash": trace_hash,
            })
        except (PydanticSerializationError, ValueError, TypeError, RecursionError):
            # A file name that is not UTF-8 in a reason, an object in detail: see recording.py.
            line = _safe_line(trace, j, trace_hash)
        lines.append(line)
    if secrets is None:
        secrets = secrets_of(j.evaluator for j in judged)
    if secrets:
        lines = [mask_json_line(line, secrets) for line in lines]
    return lines


def _safe_line(trace: Trace, judged: Judged, trace_hash: str | None) -> bytes:
    """The line of a result whose values may not serialize as they are (escaped, capped)."""
    from evalh_pipeline.store.recording import result_line

    result = build_result(trace, judged, trace_hash)
    try:
        return RESULTS.encode(result)
    except (PydanticSerializationError, ValueError, TypeError, RecursionError):
        return result_line(result).encode() + b"\n"
