"""Which eval run a Dagster run works on, and the eval.yaml it works with.

An eval run is one run directory (``runs/<run_id>/``) holding every variant's cells. A
Dagster run of the eval's assets works on exactly one eval run:

- the ``evalh/run_id`` tag names it (``evalh run``, the sensors, a resume from the UI);
- else, when the Dagster run materializes ``cases`` (the UI's "Materialize all"), it is a
  new run whose id is made from the Dagster run's creation time, so every step of the
  Dagster run (in any process) derives the same id;
- else (the UI materializes, say, only ``summary``) it is the run of the latest
  materialization of the first selected stage's upstream asset: the latest run.

The assets re-read eval.yaml when they execute, so edits apply without a reload; what
Dagster fixed when it loaded the code location (the eval's name, so its asset keys, and
whether its checks block) must still match, or the step refuses with one line saying to
reload.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg

from evalh_pipeline.config import EvalSpec
from evalh_pipeline.defs.evals.names import REJUDGE_TAG, REUSE_FROM_TAG, RUN_ID_TAG, STAGES, judge_job, run_job
from evalh_pipeline.defs.resources import RUNTIME_KEY
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.store.run_dir import RunDirectory, new_run_id, run_directory

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]*")
RELOAD = "reload the code location (Deployment → Reload, or restart `dagster dev`)"

# Dagster run id -> eval run id / live spec: the steps of one in-process run resolve once.
_RESOLVED: dict[str, str] = {}
_LIVE: dict[tuple[str, str], EvalSpec] = {}


def valid_run_id(run_id: str) -> str:
    """``run_id`` if it can name a run directory (letters, digits, ``_``, ``-``, ``.``), else a Failure."""
    if not _RUN_ID.fullmatch(run_id) or len(run_id) > 200:
        raise dg.Failure(f"tag {RUN_ID_TAG}={run_id!r} cannot name a run directory: use letters, digits, _, - and .")
    return run_id


def live_spec(context: dg.OpExecutionContext | dg.AssetCheckExecutionContext, loaded: EvalSpec) -> EvalSpec:
    """The eval as it is on disk now (or as the in-process caller handed it over), once per Dagster run.

    Refuses (one line) when the edit needs a reload: the eval renamed (its asset keys) or
    ``gates.blocking`` changed (Dagster fixed the checks' blocking at load).
    """
    key = (str(loaded.path), context.run.run_id)
    if key in _LIVE:
        return _LIVE[key]
    runtime = getattr(context.resources, RUNTIME_KEY, None)
    spec = (runtime.spec_for(loaded.path) if runtime is not None else None) or load_eval(loaded.path, settings=loaded.settings)
    reason = reload_reason(loaded, spec)
    if reason:
        raise dg.Failure(f"{loaded.path}: {reason}; {RELOAD}")
    if len(_LIVE) > 64:
        _LIVE.clear()
    _LIVE[key] = spec
    return spec


def reload_reason(loaded: EvalSpec, live: EvalSpec) -> str:
    """Why ``live`` cannot run under the definitions built from ``loaded`` ("" if it can)."""
    if live.name != loaded.name:
        return f"eval.name is now {live.name!r}, the code location loaded {loaded.name!r}"
    if live.config.gates.blocking != loaded.config.gates.blocking:
        return f"gates.blocking is now {str(live.config.gates.blocking).lower()}, the code location loaded " \
               f"{str(loaded.config.gates.blocking).lower()}"
    return ""


def _first_stage_in_run(context: dg.OpExecutionContext | dg.AssetCheckExecutionContext, eval_name: str) -> str:
    selection = context.run.asset_selection
    if selection is None:
        return "results" if context.run.job_name == judge_job(eval_name) else "cases"
    for stage in STAGES:
        if dg.AssetKey([eval_name, stage]) in selection:
            return stage
    return STAGES[-1]


def resolve_run_id(context: dg.OpExecutionContext | dg.AssetCheckExecutionContext, eval_name: str) -> str:
    """The eval run this Dagster run works on (see the module docstring)."""
    tagged = context.run.tags.get(RUN_ID_TAG)
    if tagged:
        return valid_run_id(tagged)
    if context.run.run_id in _RESOLVED:
        return _RESOLVED[context.run.run_id]
    first = _first_stage_in_run(context, eval_name)
    if first == "cases":
        record = context.instance.get_run_record_by_id(context.run.run_id)
        created = record.create_timestamp if record is not None else datetime.now(timezone.utc)
        run_id = new_run_id(eval_name, created.astimezone(timezone.utc))
    else:
        upstream = dg.AssetKey([eval_name, STAGES[STAGES.index(first) - 1]])
        event = context.instance.get_latest_materialization_event(upstream)
        value = event.asset_materialization.metadata.get("run_id") if event and event.asset_materialization else None
        if value is None:
            raise dg.Failure(f"no run of {eval_name} has materialized {upstream.to_user_string()} yet: "
                             f"launch the {run_job(eval_name)} job (Materialize all)")
        run_id = valid_run_id(str(value.value))
    if len(_RESOLVED) > 256:
        _RESOLVED.clear()
    _RESOLVED[context.run.run_id] = run_id
    return run_id


def reuse_source(context: dg.OpExecutionContext, live: EvalSpec) -> RunDirectory | None:
    """The earlier run whose unchanged traces this run copies (tag ``evalh/reuse_from``), if any.

    The tag names a run directory, or a run id in the eval's runs folder (the fixture sensor's
    choice); one that is not a run is a Failure, not a silent full run.
    """
    tagged = context.run.tags.get(REUSE_FROM_TAG)
    if not tagged:
        return None
    source = RunDirectory(Path(tagged)) if "/" in tagged else run_directory(live, valid_run_id(tagged))
    if not source.exists():
        raise dg.Failure(f"tag {REUSE_FROM_TAG}={tagged!r}: {source.path} is not a run directory (no run.json)")
    return source


def rejudge_all(context: dg.OpExecutionContext) -> bool:
    """Whether this run re-judges every result (tag ``evalh/rejudge=all``), not only what changed."""
    return context.run.tags.get(REJUDGE_TAG) == "all"
