"""Enricher registry: ``enrich_trace_from[].type`` -> class (plugins: entry point group ``evalh_pipeline.enrichers``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalh_pipeline.registry import Registry

if TYPE_CHECKING:  # the classes load on first use: loading an eval imports only the names
    from evalh_pipeline.enrichers.base import TraceEnricher

ENRICHERS: Registry[TraceEnricher] = Registry(
    "enricher",
    "evalh_pipeline.enrichers",
    {
        "http": "evalh_pipeline.enrichers.http:HttpEnricher",
    },
)
