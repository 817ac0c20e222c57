"""A reconstructable ``<eval>__run`` job for the re-execution tests: what Dagster's "Re-execute"
buttons run (they rebuild the job in a fresh context, like the code location does)."""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

EVAL_PATH_ENV = "EVALH_TEST_REEXECUTED_EVAL"


def reexecuted_run_job() -> dg.JobDefinition:
    """The run job of the eval at ``$EVALH_TEST_REEXECUTED_EVAL``, as the code location builds it."""
    from evalh_pipeline.defs.definitions import build_definitions
    from evalh_pipeline.defs.evals.names import run_job
    from evalh_pipeline.runner.loading import load_eval

    spec = load_eval(Path(os.environ[EVAL_PATH_ENV]))
    return build_definitions([spec])[0].resolve_job_def(run_job(spec.name))
