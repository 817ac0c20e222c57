"""Load an eval with every plugin entry checked against the registries of its family.

config/ parses and validates eval.yaml but imports no plugin family; this layer knows them
all (systems, evaluators, workspaces, enrichers, output stores) and hands them in, then
names where the engine writes a run whose canonical output is a URL (its working copy).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace

from evalh_pipeline.common.settings import Settings
from evalh_pipeline.config import EvalSpec, PluginRegistries, read_eval
from evalh_pipeline.enrichers.registry import ENRICHERS
from evalh_pipeline.evaluators.registry import EVALUATORS
from evalh_pipeline.outputs.publishing import is_remote, working_root
from evalh_pipeline.outputs.registry import STORES
from evalh_pipeline.systems.registry import SYSTEMS
from evalh_pipeline.workspaces.registry import WORKSPACES

PLUGINS = PluginRegistries(systems=SYSTEMS, evaluators=EVALUATORS, workspaces=WORKSPACES, enrichers=ENRICHERS,
                           stores=STORES)


def load_eval(
    path: str | os.PathLike[str], env: Mapping[str, str] | None = None, *, strict: bool = False,
    settings: Settings | None = None,
) -> EvalSpec:
    """Parse and validate one eval.yaml (see :func:`evalh_pipeline.config.read_eval`).

    ``settings`` come from the caller's edge (the CLI, the Dagster layer); without them the
    process environment is read here, once. ``env`` (default ``settings.env``) is what
    ``${VARS}`` expand from.
    """
    settings = Settings.from_environment() if settings is None else settings
    spec = read_eval(path, PLUGINS, settings, env, strict=strict)
    canonical = spec.outputs[0]
    if is_remote(canonical):
        # The engine works on a local copy; the publisher copies it to the URL (outputs/publishing.py).
        spec = replace(spec, runs_root=str(working_root(canonical, settings.cache)))
    return spec
