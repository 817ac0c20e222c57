"""Enricher registry: ``enrich_trace_from[].type`` -> class (plugins: entry point group ``evalh_pipeline.enrichers``)."""

from __future__ import annotations

from evalh_pipeline.enrichers.base import TraceEnricher
from evalh_pipeline.registry import Registry

ENRICHERS: Registry[TraceEnricher] = Registry(
    "enricher",
    "evalh_pipeline.enrichers",
    {
        "http": "evalh_pipeline.enrichers.http:HttpEnricher",
    },
)
