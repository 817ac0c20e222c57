"""Resources of the Dagster layer: what the CLI injects into the assets at run time.

``EvalhRuntime`` is a typed ``ConfigurableResource``. Its config is what can be set from the
UI's launchpad (``max_concurrency``); the objects only a process can hold (the CLI's
progress bar, the spec it loaded with ``--limit``/``--filter``) live in a process-local
session that the resource names by ``session``: Dagster rebuilds resources from their
config for every run, so such objects cannot live on the resource itself.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import dagster as dg

from evalh_pipeline.runner.progress import NoProgress, Progress

if TYPE_CHECKING:
    from evalh_pipeline.config import EvalSpec
    from evalh_pipeline.defs.prestarted import Prestarted

RUNTIME_KEY = "evalh_runtime"


@dataclass
class Session:
    """What one in-process caller (the CLI) hands to the assets it materializes."""

    progress: Progress = field(default_factory=NoProgress)
    # The spec the caller loaded (with its --limit/--filter and runs folder), used instead
    # of re-reading the eval.yaml at the same path.
    spec: EvalSpec | None = None
    # The engine's work already in flight for a run (defs/overlap.py), which the cases and
    # traces steps join instead of starting it again.
    prestarted: Prestarted | None = None


_SESSIONS: dict[str, Session] = {}


class EvalhRuntime(dg.ConfigurableResource):
    """Per-run knobs: a concurrency override, and the in-process caller's session (if any)."""

    max_concurrency: Optional[int] = None
    session: str = ""

    @classmethod
    def for_session(cls, session: Session, max_concurrency: int | None = None) -> EvalhRuntime:
        """A runtime whose assets see ``session`` (call :meth:`close` when the run is over)."""
        key = uuid.uuid4().hex
        _SESSIONS[key] = session
        return cls(max_concurrency=max_concurrency, session=key)

    def close(self) -> None:
        _SESSIONS.pop(self.session, None)

    @property
    def progress(self) -> Progress:
        found = _SESSIONS.get(self.session)
        return found.progress if found else NoProgress()

    def prestarted_for(self, run_id: str) -> Prestarted | None:
        """The caller's in-flight engine work for ``run_id``, if any."""
        found = _SESSIONS.get(self.session)
        handle = found.prestarted if found else None
        return handle if handle is not None and handle.run_id == run_id else None

    def spec_for(self, eval_path: Path) -> EvalSpec | None:
        """The caller's spec of ``eval_path``, if it handed one over."""
        found = _SESSIONS.get(self.session)
        if found is None or found.spec is None or found.spec.path.resolve() != eval_path.resolve():
            return None
        return found.spec
