"""What a TraceEnricher is, and how the runner applies a chain of them to one trace.

Configured per system in eval.yaml, as eval-harness does::

    systems:
      - name: agent_main
        adapter: http
        ...
        enrich_trace_from:
          - type: http
            url: "http://langfuse:3000/api/public/traces/{{ trace.extra.trace_id }}"
            merge: {metrics.token_input: $.usage.input}

Enrichers run in order after the system answered and before the trace is persisted, so
evaluators and stores see the enriched trace. A failing enricher never fails the cell:
``{enricher, error}`` is appended to ``trace.extra.enrichment_errors`` and the trace goes
on as the previous step left it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypeVar

from evalh_pipeline.common.configured import Configured

if TYPE_CHECKING:
    from evalh_pipeline.models import EvalCase, Trace


class EnricherConfig(BaseModel):
    """One entry of ``enrichers:``: its ``type`` and an optional ``name``."""

    model_config = ConfigDict(extra="forbid")

    type: str
    name: str | None = None


EnricherConfigT = TypeVar("EnricherConfigT", bound=EnricherConfig, default=EnricherConfig, covariant=True)


@dataclass(frozen=True)
class EnricherContext:
    eval_dir: Path
    secret_values: frozenset[str] = frozenset()


class TraceEnricher(Configured[EnricherConfigT]):
    """Base class: name the config model as the parameter (``class Mine(TraceEnricher[MineConfig])``)
    and implement :meth:`enrich` (mutate the trace in place)."""

    Config: ClassVar[type[EnricherConfig]]  # set from the generic parameter (common/configured.py)

    def __init__(self, config: Mapping[str, Any], context: EnricherContext) -> None:
        self.config = self._validated_config(dict(config))
        self.context = context

    @property
    def name(self) -> str:
        return self.config.name or self.config.type

    async def start(self) -> None:
        """Open clients (once per run)."""

    async def enrich(self, case: EvalCase, trace: Trace) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        """Close clients."""


def build_enrichers(configs: Sequence[Mapping[str, Any]], context: EnricherContext) -> list[TraceEnricher]:
    from evalh_pipeline.enrichers.registry import ENRICHERS

    return [ENRICHERS.get(config["type"])(config, context) for config in configs]


async def enrich_trace(enrichers: Sequence[TraceEnricher | Exception], case: EvalCase, trace: Trace) -> None:
    """Apply the chain; each failure is recorded on the trace and the chain goes on."""
    from evalh_pipeline.models import Trace as TraceModel

    for enricher in enrichers:
        if isinstance(enricher, Exception):  # did not start: recorded on every trace it should have enriched
            _record(trace, getattr(enricher, "enricher_name", "enricher"), str(enricher))
            continue
        before = trace.model_dump()
        try:
            await enricher.enrich(case, trace)
            TraceModel.model_validate(trace.model_dump())  # an enricher must leave a valid trace
        except Exception as exc:  # noqa: BLE001 - an enricher never fails the cell
            restored = TraceModel.model_validate(before)
            for field in TraceModel.model_fields:
                setattr(trace, field, getattr(restored, field))
            _record(trace, enricher.name, _clean(f"{type(exc).__name__}: {exc}", enricher.context.secret_values))


def _record(trace: Trace, name: str, error: str) -> None:
    trace.extra.setdefault("enrichment_errors", []).append({"enricher": name, "error": error})


def _clean(text: str, secrets: frozenset[str]) -> str:
    """Secrets masked, then one line (an HTTP parser's error spans several)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return " ".join(text.split())
