"""Resources of the Dagster layer: what the CLI injects into the assets at run time."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import dagster as dg

from evalh_pipeline.config import EvalSpec
from evalh_pipeline.runner.progress import NoProgress, Progress

RUNTIME_KEY = "evalh_runtime"


@dataclass
class EvalhRuntime:
    """Per-process knobs: a progress sink (the CLI's bar), a concurrency override, and the
    folder the CLI's run lives in (``runs_root``: a run directory named on the command line
    may sit outside the eval's ``output[0]``; the assets then work on it there)."""

    progress: Progress = field(default_factory=NoProgress)
    max_concurrency: int | None = None
    runs_root: str | None = None

    def locate(self, spec: EvalSpec) -> EvalSpec:
        """``spec`` pointed at :attr:`runs_root` when one is set."""
        if self.runs_root is None or str(spec.runs_root) == self.runs_root:
            return spec
        return replace(spec, runs_root=self.runs_root)


def runtime_resource(runtime: EvalhRuntime | None = None) -> dg.ResourceDefinition:
    return dg.ResourceDefinition.hardcoded_resource(runtime or EvalhRuntime(), "evalh run-time settings")
