"""``otel``: each trace exported as an OpenTelemetry span over OTLP/HTTP (write-only).

    output:
      - type: otel
        endpoint: http://collector:4318          # /v1/traces is added when missing
        headers: {authorization: "Bearer ${OTEL_TOKEN}"}
        service_name: evalh
        resource_attributes: {deployment.environment: ci}
        run_namespace: {project: agent_v3}       # exported as evalh.namespace.<key> attributes

Needs the ``otel`` extra (opentelemetry-sdk and its OTLP/HTTP exporter). One span per
trace (cell), with a child span per tool call (``execute_tool <name>``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``) and per evaluation result (``evaluate <evaluator>``,
``evaluation.passed``, ``evaluation.score``, ``evaluation.reason``), and the GenAI semantic
conventions where they fit: ``gen_ai.operation.name``
``invoke_agent``, ``gen_ai.agent.name`` (the variant), ``gen_ai.request.model`` (the
variant's ``metadata.model``), ``gen_ai.usage.input_tokens`` / ``output_tokens``, the
span's start and end from the trace (its latency), and on error an ERROR status with
``error.type``. The span and trace ids are derived from the cell and its start time and
put on the trace before it is persisted (``extra.span_id``, ``extra.otel_trace_id``), so
the run directory names the span a collector received. Which spans were accepted is kept
in a hidden state file in the run directory: a span is exported once, and a failed export
is retried after the next stage.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, field_validator

from evalh_pipeline.store.jsonl import iter_lines
from evalh_pipeline.store.run_dir import RunDirectory, write_atomic
from evalh_pipeline.outputs.stores.base import StoreConfig, StoreError, TraceStore

if TYPE_CHECKING:
    from evalh_pipeline.models import Trace

BATCH = 256


class OtelConfig(StoreConfig):
    endpoint: str = Field(min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)
    service_name: str = "evalh"
    resource_attributes: dict[str, str] = Field(default_factory=dict)
    timeout_seconds: float = Field(default=10, gt=0)
    # eval-harness's key: OTLP over HTTP is the one transport here.
    protocol: Literal["http", "http/protobuf"] = "http"

    @field_validator("endpoint")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("endpoint must be an http:// or https:// URL (OTLP/HTTP)")
        return value


def span_ids(trace: Mapping[str, Any]) -> tuple[int, int]:
    """(trace id, span id) of a trace: a digest of its cell and start time (a retried cell gets new ids)."""
    seed = "\0".join(str(trace.get(k) or "") for k in ("run_id", "case_id", "variant_name", "sample", "started_at"))
    digest = hashlib.sha256(seed.encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


def _child_span_id(trace: Mapping[str, Any], index: int) -> int:
    """The span id of the trace's ``index``-th tool call (derived like the trace's own)."""
    seed = "\0".join(str(trace.get(k) or "") for k in ("run_id", "case_id", "variant_name", "sample", "started_at"))
    return int.from_bytes(hashlib.sha256(f"{seed}\0tool\0{index}".encode()).digest()[:8], "big") or 1


def _nanos(value: Any) -> int | None:
    if not value:
        return None
    stamp = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return int(stamp.timestamp() * 1_000_000_000)


class OtelStore(TraceStore[OtelConfig]):
    """Exports each persisted trace as one span; records which were accepted."""

    @property
    def endpoint(self) -> str:
        url = self.config.endpoint.rstrip("/")
        return url if url.endswith("/v1/traces") else f"{url}/v1/traces"

    @property
    def label(self) -> str:
        return f"otel {self.endpoint}"

    def annotate(self, trace: Trace) -> None:
        trace_id, span_id = span_ids(trace.model_dump(mode="json", include={
            "run_id", "case_id", "variant_name", "sample", "started_at"}))
        trace.extra["span_id"] = format(span_id, "016x")
        trace.extra["otel_trace_id"] = format(trace_id, "032x")

    def _state_path(self, run_dir: RunDirectory) -> Path:
        return run_dir.otel_state(self.endpoint)

    def write_run(self, run_dir: RunDirectory, stage: str) -> None:
        state_path = self._state_path(run_dir)
        exported: set[str] = set(json.loads(state_path.read_text())) if state_path.exists() else set()
        cells: dict[tuple[str, str, int], tuple[int, int]] = {}
        pending_traces = []
        for _, line in iter_lines(run_dir.traces):
            trace = json.loads(line)
            ids = span_ids(trace)
            cells[(trace["case_id"], trace["variant_name"], int(trace.get("sample") or 0))] = ids
            if format(ids[1], "016x") not in exported:
                pending_traces.append(trace)
        pending_results = []
        for _, line in iter_lines(run_dir.results):
            result = json.loads(line)
            parent = cells.get((result["case_id"], result["variant_name"], int(result.get("sample") or 0)))
            if parent is None:
                continue  # its trace was dropped (retry-failed): a new one comes with the new trace
            # A re-evaluation's new verdict is a new span; the same verdict is never sent twice.
            span_id = int.from_bytes(hashlib.sha256(f"{parent[1]}\0{line}".encode()).digest()[:8], "big") or 1
            if format(span_id, "016x") not in exported:
                pending_results.append((result, parent, span_id))
        if not pending_traces and not pending_results:
            return
        models = _variant_models(run_dir)
        for start in range(0, len(pending_traces), BATCH):
            chunk = pending_traces[start:start + BATCH]
            self._export(chunk, [], models)
            exported.update(format(span_ids(t)[1], "016x") for t in chunk)
            write_atomic(state_path, json.dumps(sorted(exported)) + "\n")
        for start in range(0, len(pending_results), BATCH):
            results = pending_results[start:start + BATCH]
            self._export([], results, models)
            exported.update(format(span_id, "016x") for _, _, span_id in results)
            write_atomic(state_path, json.dumps(sorted(exported)) + "\n")

    def _export(self, traces: list[dict[str, Any]], results: list[tuple[dict[str, Any], tuple[int, int], int]],
                models: dict[str, str]) -> None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
            from opentelemetry.sdk.trace.export import SpanExportResult
            from opentelemetry.sdk.trace.id_generator import IdGenerator
            from opentelemetry.trace import (
                NonRecordingSpan,
                SpanContext,
                SpanKind,
                Status,
                StatusCode,
                TraceFlags,
                set_span_in_context,
            )
        except ImportError as exc:
            raise StoreError("the otel store needs opentelemetry: pip install 'evalh-pipeline[otel]'") from exc

        class Preset(IdGenerator):
            """Hands out the ids derived from the trace being exported (one span at a time)."""

            ids = (1, 1)

            def generate_trace_id(self) -> int:
                return self.ids[0]

            def generate_span_id(self) -> int:
                return self.ids[1]

        class Collect(SpanProcessor):
            def __init__(self) -> None:
                self.spans: list[Any] = []

            def on_end(self, span: Any) -> None:
                self.spans.append(span)

        preset, collect = Preset(), Collect()
        resource = Resource.create({"service.name": self.config.service_name, **self.config.resource_attributes})
        # A provider of our own: the process-wide one belongs to the user's code.
        provider = TracerProvider(resource=resource, id_generator=preset)
        provider.add_span_processor(collect)
        tracer = provider.get_tracer("evalh_pipeline")
        for trace in traces:
            preset.ids = span_ids(trace)
            variant = trace.get("variant_name") or ""
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": variant,
                "evalh.run_id": trace.get("run_id") or "",
                "evalh.case_id": trace.get("case_id") or "",
                "evalh.variant_name": variant,
                "evalh.sample": int(trace.get("sample") or 0),
                "evalh.latency_ms": int(trace.get("latency_ms") or 0),
                **{f"evalh.namespace.{k}": v for k, v in self.namespace.items()},
            }
            if variant in models:
                attributes["gen_ai.request.model"] = models[variant]
            metrics = trace.get("metrics") or {}
            for key, attr in (("token_input", "gen_ai.usage.input_tokens"), ("token_output", "gen_ai.usage.output_tokens"),
                              ("token_thinking", "evalh.usage.thinking_tokens"), ("cost_usd", "evalh.cost_usd"),
                              ("latency_first_token_ms", "evalh.latency_first_token_ms")):
                if metrics.get(key) is not None:
                    attributes[attr] = metrics[key]
            if (upstream := (trace.get("extra") or {}).get("trace_id")) is not None:
                attributes["evalh.upstream_trace_id"] = str(upstream)
            error = trace.get("error")
            if error:
                attributes["error.type"] = error.get("type") or "error"
            start = _nanos(trace.get("started_at"))
            span = tracer.start_span(f"invoke_agent {variant}", kind=SpanKind.CLIENT, attributes=attributes,
                                     start_time=start)
            parent = set_span_in_context(span)
            for index, call in enumerate(trace.get("tool_calls") or []):
                preset.ids = (preset.ids[0], _child_span_id(trace, index))
                tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": str(call.get("name") or "")}
                if call.get("id"):
                    tool["gen_ai.tool.call.id"] = str(call["id"])
                child_start = _nanos(call.get("started_at")) or start
                child = tracer.start_span(f"execute_tool {tool['gen_ai.tool.name']}", context=parent,
                                          kind=SpanKind.INTERNAL, attributes=tool, start_time=child_start)
                child.end(end_time=child_start)
            if error:
                span.set_status(Status(StatusCode.ERROR, str(error.get("message") or "")[:1000]))
            span.end(end_time=_nanos(trace.get("finished_at")))
        for result, (trace_id, parent_id), span_id in results:
            # A child of the cell's span, exported earlier: its context is rebuilt from the ids.
            parent = set_span_in_context(NonRecordingSpan(SpanContext(
                trace_id, parent_id, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))))
            preset.ids = (trace_id, span_id)
            attributes = {
                "evalh.evaluator": str(result.get("evaluator") or ""),
                "evalh.evaluator_type": str(result.get("evaluator_type") or ""),
                "evaluation.passed": bool(result.get("passed")),
                "evaluation.reason": str(result.get("reason") or "")[:1000],
                "evalh.case_id": str(result.get("case_id") or ""),
                "evalh.variant_name": str(result.get("variant_name") or ""),
            }
            if result.get("score") is not None:
                attributes["evaluation.score"] = float(result["score"])
            error = result.get("error")
            if error:
                attributes["error.type"] = error.get("type") or "error"
            span = tracer.start_span(f"evaluate {attributes['evalh.evaluator']}", context=parent,
                                     kind=SpanKind.INTERNAL, attributes=attributes,
                                     start_time=_nanos(result.get("started_at")))
            if error:
                span.set_status(Status(StatusCode.ERROR, str(error.get("message") or "")[:1000]))
            span.end(end_time=_nanos(result.get("finished_at")))
        exporter = OTLPSpanExporter(endpoint=self.endpoint, headers=dict(self.config.headers),
                                    timeout=self.config.timeout_seconds)
        try:
            exported = exporter.export(collect.spans)
        finally:
            exporter.shutdown()  # type: ignore[no-untyped-call]  # opentelemetry leaves it unannotated
            provider.shutdown()
        if exported is not SpanExportResult.SUCCESS:
            raise StoreError(f"{self.endpoint} did not accept {len(collect.spans)} span(s)")


def _variant_models(run_dir: RunDirectory) -> dict[str, str]:
    """variant name -> ``metadata.model`` from the run's config snapshot."""
    from evalh_pipeline.common.yaml_files import load_yaml_text

    if not run_dir.config_yaml.exists():
        return {}
    config = load_yaml_text(run_dir.config_yaml.read_text(encoding="utf-8")) or {}
    models = {}
    for system in config.get("systems") or []:
        model = (system.get("metadata") or {}).get("model") if isinstance(system, dict) else None
        if model:
            models[str(system.get("name"))] = str(model)
    return models
