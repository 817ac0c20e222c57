"""What the CLI hands to a run and gets back, importable without Dagster (cheap for commands that never run one)."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalh_pipeline.errors import InfrastructureError
from evalh_pipeline.models import RunSummary
from evalh_pipeline.runner.progress import NoProgress, Progress
from evalh_pipeline.store.run_dir import RunDirectory


# The metadata key of the traces step's failure when no system answered any cell (its value
# is the most common error type).
NO_ANSWER_KEY = "no_system_answered"


class NoSystemAnswered(InfrastructureError):
    """The run's traces step failed because every cell errored before its system answered;
    the message is the cause (the most common error), every trace is written."""

    def __init__(self, cause: str, error_type: str) -> None:
        super().__init__(cause)
        self.error_type = error_type


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


@dataclass
class RunOutcome:
    """What a materialization of a run left: its directory, its summary, the Dagster run(s)
    that recorded it and the gates (asset checks) that failed, as ``<eval>/<asset>: <gate>``."""

    run_dir: RunDirectory
    summary: RunSummary
    dagster_run_ids: list[str] = field(default_factory=list)
    failed_checks: list[str] = field(default_factory=list)
