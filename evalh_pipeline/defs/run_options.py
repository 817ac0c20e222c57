"""What the CLI hands to a run, importable without Dagster (the CLI starts the engine before Dagster)."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalh_pipeline.runner.progress import NoProgress, Progress


class InfrastructureError(RuntimeError):
    """Dagster could not materialize the assets for a reason other than the user's config."""


@dataclass
class RunOptions:
    """What the CLI hands to the assets of an in-process run.

    ``progress`` is its progress sink, ``max_concurrency`` a concurrency override,
    ``reuse_from`` the run directory whose unchanged traces a new run copies instead of
    calling the system (``evalh run --reuse``), and ``rejudge_all`` re-judges every result,
    not only those whose evaluator changed (``evalh re-evaluate --all``). The last two also
    go on the Dagster run as tags (defs/evals/names.py), so the UI shows them.
    """

    progress: Progress = field(default_factory=NoProgress)
    max_concurrency: int | None = None
    reuse_from: str | None = None
    rejudge_all: bool = False
