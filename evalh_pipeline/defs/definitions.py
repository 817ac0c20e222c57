"""Build the Dagster Definitions: one asset group per eval, plus shared resources."""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from evalh_pipeline.config import EvalSpec
from evalh_pipeline.defs.cli_runs import build_abandoned_runs_sensor
from evalh_pipeline.defs.discovery import discover_evals, evals_dirs
from evalh_pipeline.defs.evals.assets import EvalAssets, build_eval_assets
from evalh_pipeline.defs.resources import RUNTIME_KEY, EvalhRuntime, runtime_resource


def build_definitions(
    specs: list[EvalSpec] | None = None, runtime: EvalhRuntime | None = None
) -> tuple[dg.Definitions, dict[str, EvalAssets]]:
    """Definitions for ``specs`` (default: the evals folder) and the per-eval handles."""
    if specs is None:
        specs = discover_evals().specs
    built = {spec.name: build_eval_assets(spec) for spec in specs}
    defs = dg.Definitions(
        assets=[asset for b in built.values() for asset in b.assets],
        jobs=[job for b in built.values() for job in b.jobs],
        asset_checks=[check for b in built.values() for check in b.checks],
        # The evals' automation, and the one sensor that ends the CLI's runs whose evalh died.
        sensors=[*(sensor for b in built.values() for sensor in b.sensors), build_abandoned_runs_sensor()],
        resources={RUNTIME_KEY: runtime_resource(runtime),
                   **{key: manager for b in built.values() for key, manager in b.resources.items()}},
        # Every step of a run in one process, also for the UI's ad hoc asset selections:
        # a step is a stage of one eval run, not worth a process of its own.
        executor=dg.in_process_executor,
    )
    return defs, built


def load_code_location(default_evals_dir: Path | None = None) -> dg.Definitions:
    """The code location's Definitions, as ``definitions.py`` and ``dagster dev`` load them."""
    folders = evals_dirs(default_evals_dir)
    return build_definitions(discover_evals(folders).specs)[0]


def code_location() -> dg.Definitions:
    """The code location as a process rebuilds it from its name alone (the pointer of a run
    whose steps run in other processes: a celery worker, a step container): the evals under
    ``$EVALH_EVALS_DIR``, else the project's ``evals/``, as ``definitions.py`` serves them."""
    from evalh_pipeline.defs.discovery import project_evals_dir

    return load_code_location(project_evals_dir())
