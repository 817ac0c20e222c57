"""``replay``: score recorded traces without calling any system (eval-harness's online eval).

The dataset (``type: fixture`` with ``embed_full_trace: true``) gives each case the trace it
recorded in production under ``embedded_trace``; this adapter hands that trace back as the
cell's response, keeping its recorded timing and metrics.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from pydantic import ConfigDict, ValidationError

from evalh_pipeline.models import EvalCase, Trace
from evalh_pipeline.systems.base import AdapterError, SystemAdapter, SystemConfigModel, SystemResponse, Workspace


class ReplayConfig(SystemConfigModel):
    # eval-harness's replay takes no keys of its own; anything else on the system is ignored there too.
    model_config = ConfigDict(extra="allow")


class ReplaySystem(SystemAdapter[ReplayConfig]):
    """Returns each case's ``embedded_trace`` as the cell's response (or, when the case has
    ``embedded_traces``, a mapping of variant name to trace, the variant's own).

    The recorded ``started_at``, ``finished_at``, ``latency_ms``, output, messages, tool
    calls and results, metrics and extra are kept; ``extra.source`` becomes ``replay`` and
    ``extra.replayed_from`` records ``{platform, trace_id, fetched_at}`` (the platform is
    ``systems[].metadata.source``, else the trace's ``extra.source_platform``). A case
    without an embedded trace fails its cell (``adapter_error``).
    """

    async def run(self, case: EvalCase, workspace: Workspace | None) -> SystemResponse:
        extra_keys = case.model_extra or {}
        by_variant = extra_keys.get("embedded_traces")
        # `embedded_traces: {variant: trace}` (an imported tool's results: one trace per variant)
        # wins over the one `embedded_trace` every variant replays.
        raw = by_variant.get(self.variant.name) if isinstance(by_variant, dict) else None
        raw = raw if raw is not None else extra_keys.get("embedded_trace")
        if raw is None:
            raise AdapterError(f"replay: case {case.id!r} has no embedded_trace (use a dataset of type fixture "
                               "with embed_full_trace: true, whose cases carry embedded_trace)"
                               + (f" nor embedded_traces[{self.variant.name!r}]" if isinstance(by_variant, dict) else ""))
        recorded = _as_trace(raw, case)
        extra: dict[str, Any] = dict(recorded.extra)
        platform = self.variant.metadata.get("source") or extra.get("source_platform")
        extra["source"] = "replay"
        extra["replayed_from"] = {"platform": platform, "trace_id": recorded.extra.get("trace_id"),
                                  "fetched_at": datetime.now(timezone.utc).isoformat()}
        return SystemResponse(
            output=recorded.output, messages=recorded.messages, tool_calls=recorded.tool_calls,
            tool_results=recorded.tool_results, metrics=recorded.metrics, extra=extra,
            started_at=recorded.started_at, finished_at=recorded.finished_at, latency_ms=recorded.latency_ms,
        )


def _as_trace(raw: Any, case: EvalCase) -> Trace:
    if not isinstance(raw, dict):
        raise AdapterError(f"replay: case {case.id!r}: embedded_trace must be a mapping, got {type(raw).__name__}")
    now = datetime.now(timezone.utc).isoformat()
    # The join keys are the current run's; a recorded trace may leave them out.
    filled = {"run_id": "replay", "variant_name": "replay", "started_at": now, "finished_at": now, "latency_ms": 0,
              **raw, "case_id": case.id}
    try:
        return Trace.model_validate(filled)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise AdapterError(f"replay: case {case.id!r}: embedded_trace.{where}: {err['msg']}") from None
