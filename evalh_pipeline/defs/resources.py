"""Resources of the Dagster layer: what the CLI injects into the assets at run time."""

from __future__ import annotations

from dataclasses import dataclass, field

import dagster as dg

from evalh_pipeline.runner.progress import NoProgress, Progress

RUNTIME_KEY = "evalh_runtime"


@dataclass
class EvalhRuntime:
    """Per-process knobs: a progress sink (the CLI's bar) and a concurrency override."""

    progress: Progress = field(default_factory=NoProgress)
    max_concurrency: int | None = None


def runtime_resource(runtime: EvalhRuntime | None = None) -> dg.ResourceDefinition:
    return dg.ResourceDefinition.hardcoded_resource(runtime or EvalhRuntime(), "evalh run-time settings")
