"""Which eval run a Dagster step works on: the partition of its run (key = run id).

Every asset of an eval's stages, and every check on them, is partitioned by the eval's
dynamic partitions (``<eval>__runs``), so a Dagster run of them always names its eval run:
``evalh run`` adds the partition and executes the job for it, the UI asks for a partition
(or adds one) before it launches, the sensors add one and request its run in the same tick,
and Dagster's own "Re-execute" keeps the partition of the run it re-executes. The run
directory is ``<runs folder>/<partition key>``.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from evalh_pipeline.config import EvalSpec
from evalh_pipeline.defs.cli_runs import finishing_command
from evalh_pipeline.defs.evals.names import (
    EVAL_FILE_TAG,
    PARTITION_TAG,
    REJUDGE_TAG,
    REPEATS_TAG,
    REUSE_FROM_TAG,
    RUN_DIR_TAG,
    run_id_problem,
)
from evalh_pipeline.defs.resources import RUNTIME_KEY
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.outputs.publishing import pull_run, run_location
from evalh_pipeline.store.run_dir import RunDirectory, run_directory

RELOAD = "reload the code location (Deployment → Reload, or restart `dagster dev`)"


def valid_run_id(run_id: str) -> str:
    """``run_id`` if it can be a run id (a folder name and a partition key), else a one-line Failure."""
    problem = run_id_problem(run_id)
    if problem:
        raise dg.Failure(problem)
    return run_id


def live_spec(context: dg.OpExecutionContext, loaded: EvalSpec) -> EvalSpec:
    """The eval as it is on disk now (or as the in-process caller handed it over).

    Refuses (one line) when the edit needs a reload: the eval renamed (its asset keys) or
    ``gates.blocking`` changed (Dagster fixed the checks' blocking at load); and when the run
    belongs to another eval file or run folder (:func:`other_eval_problem`).
    """
    runtime = getattr(context.resources, RUNTIME_KEY, None)
    spec = (runtime.spec_for(loaded.path) if runtime is not None else None) or load_eval(loaded.path, settings=loaded.settings)
    reason = reload_reason(loaded, spec)
    if reason:
        raise dg.Failure(f"{loaded.path}: {reason}; {RELOAD}")
    problem = other_eval_problem(context, spec)
    if problem:
        raise dg.Failure(problem)
    return spec


def other_eval_problem(context: dg.OpExecutionContext, live: EvalSpec) -> str:
    """Why this step must not work on its run: a run of another eval file or run folder ("" if it may).

    A CLI run's tags name the eval file and the run directory it worked on (absolute paths),
    and a "Re-execute" in the UI keeps its parent's tags. Jobs and partitions are keyed by
    the eval's *name*, so the code location also finds the job of a run made from another
    file of the same name (an eval outside its folders, or a copy), or whose run folder is
    elsewhere (``--resume`` of a moved folder, another ``$EVALH_RUNS_DIR``): re-executed here it
    would run this eval into this eval's runs folder. The eval is identified by its file, not
    its content: the steps always read the file as it is now (:func:`live_spec`), so a
    re-execution after an edit of the same file finishes the run as ``evalh run --resume``
    would.
    """
    tags = context.run.tags
    eval_file, run_dir = tags.get(EVAL_FILE_TAG), tags.get(RUN_DIR_TAG)
    if not eval_file and not run_dir:
        return ""  # a run the UI, a sensor or a backfill launched: this code location's own
    # A run published to a URL is named by its URL: each machine's working copy is elsewhere.
    here = run_location(live, run_partition(context))
    same_folder = run_dir == here if "://" in here else Path(run_dir or "") == Path(here)
    if (not eval_file or Path(eval_file) == live.path.resolve()) and (not run_dir or same_folder):
        return ""
    return (f"this run belongs to {eval_file or live.path} (run folder {run_dir or here}), not to {live.path} "
            f"(run folder {here}) that this code location serves as {live.name!r}; {finishing_command(context.run)}")


def reload_reason(loaded: EvalSpec, live: EvalSpec) -> str:
    """Why ``live`` cannot run under the definitions built from ``loaded`` ("" if it can)."""
    if live.name != loaded.name:
        return f"eval.name is now {live.name!r}, the code location loaded {loaded.name!r}"
    if live.config.gates.blocking != loaded.config.gates.blocking:
        return f"gates.blocking is now {str(live.config.gates.blocking).lower()}, the code location loaded " \
               f"{str(loaded.config.gates.blocking).lower()}"
    return ""


def run_partition(context: dg.OpExecutionContext) -> str:
    """The eval run of this step: its run's partition key (the run id), validated."""
    key = context.partition_key if context.has_partition_key else context.run.tags.get(PARTITION_TAG)
    if not key:
        raise dg.Failure("this run has no partition: pick the eval run (a partition of the eval's runs) "
                         "before launching, or add one")
    return valid_run_id(key)


def reuse_source(context: dg.OpExecutionContext, live: EvalSpec) -> RunDirectory | None:
    """The earlier run whose unchanged traces this run copies (tag ``evalh/reuse_from``), if any.

    The tag names a run directory, or a run id in the eval's runs folder (the fixture sensor's
    choice, and `evalh run --reuse <URL>` of the eval's URL output: this machine's working copy
    of it is brought up to date first); one that is not a run is a Failure, not a silent full run.
    """
    tagged = context.run.tags.get(REUSE_FROM_TAG)
    if not tagged:
        return None
    source = RunDirectory(Path(tagged)) if "/" in tagged else run_directory(live, valid_run_id(tagged))
    if "/" not in tagged:
        pull_run(live, source)  # published from another machine (a no-op for a local output)
    if not source.exists():
        raise dg.Failure(f"tag {REUSE_FROM_TAG}={tagged!r}: {source.path} is not a run directory (no run.json)")
    return source


def judging_repeats(context: dg.OpExecutionContext) -> int:
    """How often the judge-consistency job judges each trace (tag ``evalh/repeat_judging``; 3 unset)."""
    text = context.run.tags.get(REPEATS_TAG, "3")
    if not text.isdigit() or int(text) < 2:
        raise dg.Failure(f"tag {REPEATS_TAG}={text!r}: K must be a whole number of 2 or more "
                         "(a verdict per cell cannot disagree with itself)")
    return int(text)


def rejudge_all(context: dg.OpExecutionContext) -> bool:
    """Whether this run re-judges every result (tag ``evalh/rejudge=all``), not only what changed."""
    return context.run.tags.get(REJUDGE_TAG) == "all"
