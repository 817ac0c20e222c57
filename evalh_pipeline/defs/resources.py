"""The one resource of the Dagster layer: what a run's steps get besides the eval and the partition.

``evalh_runtime`` carries a concurrency override (settable in the UI's launchpad) and, when the
CLI executes a job in its own process, the CLI's progress sink and the spec it loaded
(``--limit``/``--filter``, a run folder named on the command line). The CLI hands that object
to Dagster as the resource of the run it executes: nothing is kept anywhere else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg

from evalh_pipeline.runner.progress import NoProgress, Progress

if TYPE_CHECKING:
    from evalh_pipeline.config import EvalSpec

RUNTIME_KEY = "evalh_runtime"


@dataclass
class EvalhRuntime:
    """Per-run knobs of the steps: a concurrency override, and the in-process caller's view."""

    max_concurrency: int | None = None
    progress: Progress = field(default_factory=NoProgress)
    # The spec the CLI loaded, used instead of re-reading the eval file at the same path.
    spec: EvalSpec | None = None
    # Run directory -> the digest of its traces.jsonl's complete lines, as this launch's traces
    # stage wrote them (its appender kept it): the later stages of the same launch use it
    # instead of reading the file again. A launch that did not write them reads the file.
    traces_digests: dict[str, str] = field(default_factory=dict)
    # Run directory -> the lines of its traces.jsonl before the ones that stage wrote and sealed
    # (TraceStats.traces_sealed_after): the results stage reads those lines' trace_hash.
    traces_sealed_after: dict[str, int] = field(default_factory=dict)

    def spec_for(self, eval_path: Path) -> EvalSpec | None:
        """The caller's spec of ``eval_path``, if it handed one over."""
        if self.spec is None or self.spec.path.resolve() != eval_path.resolve():
            return None
        return self.spec


def runtime_resource(runtime: EvalhRuntime | None = None) -> dg.ResourceDefinition:
    """``runtime`` as the run's resource (the CLI's), or the code location's: configurable in
    the launchpad (``resources: {evalh_runtime: {config: {max_concurrency: 8}}}``)."""
    if runtime is not None:
        return dg.ResourceDefinition.hardcoded_resource(runtime, "the evalh CLI's progress and eval")
    return dg.ResourceDefinition(
        resource_fn=lambda context: EvalhRuntime(max_concurrency=context.resource_config["max_concurrency"]),
        config_schema={"max_concurrency": dg.Field(dg.Noneable(int), is_required=False, default_value=None,
                                                   description="Override run.max_concurrency for this run.")},
        description="Per-run knobs of evalh's steps (max_concurrency overrides run.max_concurrency).",
    )
