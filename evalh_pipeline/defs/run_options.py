"""What the CLI hands to a run, importable without Dagster (the CLI starts the engine before Dagster)."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalh_pipeline.runner.progress import NoProgress, Progress


class InfrastructureError(RuntimeError):
    """Dagster could not materialize the assets for a reason other than the user's config."""


@dataclass
class RunOptions:
    """What the CLI hands to the assets of an in-process run: its progress sink and a concurrency override."""

    progress: Progress = field(default_factory=NoProgress)
    max_concurrency: int | None = None
