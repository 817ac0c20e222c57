"""A reconstructable ``<eval>__run`` job for the re-execution tests: what Dagster's "Re-execute"
buttons run (they rebuild the job in a fresh context, like the code location does)."""

from __future__ import annotations

from pathlib import Path

import dagster as dg


def reexecuted_run_job(eval_path: str) -> dg.JobDefinition:
    """The run job of the eval at ``eval_path``, as the code location builds it."""
    from evalh_pipeline.defs.definitions import build_definitions
    from evalh_pipeline.defs.evals.names import run_job
    from evalh_pipeline.runner.loading import load_eval

    spec = load_eval(Path(eval_path))
    return build_definitions([spec])[0].resolve_job_def(run_job(spec.name))


def served_run_job(eval_path: Path):
    """The reconstructable run job of the eval at ``eval_path``. The path is part of the job's
    pointer: Dagster keeps the last job it rebuilt per pointer (``lru_cache``), so a pointer
    without it would hand a test the eval of the test before."""
    return dg.build_reconstructable_job(__name__, reexecuted_run_job.__name__, reconstructable_args=(str(eval_path),))
