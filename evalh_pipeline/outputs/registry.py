"""The output registry: ``output[].type`` names -> run folders, trace stores and sinks
(plugins: entry point group ``evalh_pipeline.stores``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalh_pipeline.registry import Registry

if TYPE_CHECKING:  # the classes load on first use: loading an eval imports only the names
    from evalh_pipeline.outputs.stores.base import TraceStore

STORES: Registry[TraceStore] = Registry(
    "output type",
    "evalh_pipeline.stores",
    {
        "local_files": "evalh_pipeline.outputs.stores.local_files:LocalFilesStore",
        "sqlite": "evalh_pipeline.outputs.stores.sqlite:SqliteStore",
        "postgres": "evalh_pipeline.outputs.stores.postgres:PostgresStore",
        "otel": "evalh_pipeline.outputs.stores.otel:OtelStore",
        "webhook": "evalh_pipeline.outputs.webhook:WebhookStore",
    },
)
