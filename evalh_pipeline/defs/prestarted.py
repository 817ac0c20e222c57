"""The engine's work for one run, done (or started) outside Dagster, that the run's steps join.

``evalh run`` starts its engine before Dagster is ready (defs/overlap.py) and ``evalh
re-evaluate`` finishes it before Dagster starts (defs/record_after.py); in both the steps
of the Dagster run report that work instead of doing it again. Importable without Dagster
or the engine's stages.
"""

from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evalh_pipeline.defs.run_options import InfrastructureError

if TYPE_CHECKING:
    from evalh_pipeline.models import RunSummary
    from evalh_pipeline.runner.drift import RunDrift
    from evalh_pipeline.runner.evaluation import EvaluationStats
    from evalh_pipeline.runner.gates import GateVerdict
    from evalh_pipeline.runner.stages import CasesInfo
    from evalh_pipeline.runner.traces import TraceStats

# The stages the engine can do ahead of Dagster, in order.
STAGES = ("cases", "traces", "results", "summary", "drift")


class EngineInterrupted(RuntimeError):
    """The CLI's cell loop was interrupted (Ctrl-C): the Dagster run stops at its traces step."""


@dataclass
class Prestarted:
    """The engine's work for one run, started before Dagster is ready (None: a stage it does not do).

    ``published``: the engine published each stage it did (store/publishing.py), so the steps
    do not again. ``gates``: the gates it judged (runner/gates.py), by name, which the checks
    report instead of judging again (defs/record_after.py)."""

    run_id: str
    cases: Future[CasesInfo] | None = field(default_factory=Future)
    traces: Future[TraceStats] | None = field(default_factory=Future)
    results: Future[EvaluationStats] | None = None
    summary: Future[RunSummary] | None = None
    drift: Future[RunDrift] | None = None
    published: bool = False
    gates: dict[str, GateVerdict] | None = None


def require_dagster_home() -> None:
    """Refuse a ``$DAGSTER_HOME`` that is not a directory before any work: Dagster would
    refuse it only after the engine had run every cell."""
    home = os.environ.get("DAGSTER_HOME")
    if home and not Path(home).is_dir():
        raise InfrastructureError(f"$DAGSTER_HOME {home!r} is not a directory: create it, or unset DAGSTER_HOME "
                                  "to use ./.dagster_home")


def fork_is_safe() -> bool:
    """Whether this process may fork the engine or a recorder: Linux, and no other thread
    running (forking copies only the calling thread, so another thread's lock, a progress
    display's or a logging handler's, would stay held in the child forever)."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


__all__ = ["STAGES", "EngineInterrupted", "Prestarted", "fork_is_safe", "require_dagster_home"]
