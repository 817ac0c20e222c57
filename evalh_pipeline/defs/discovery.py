"""Find the evals the code location serves: every eval.yaml under the evals folder."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

from evalh_pipeline.config import ConfigError, EvalSpec, load_eval

log = logging.getLogger(__name__)

EVALS_DIR_ENV = "EVALH_EVALS_DIR"


def evals_dirs(default: Path | None = None) -> list[Path]:
    """``$EVALH_EVALS_DIR`` (``os.pathsep``-separated for several), else ``default`` or ``./evals``."""
    configured = os.environ.get(EVALS_DIR_ENV)
    if configured:
        return [Path(p) for p in configured.split(os.pathsep) if p]
    return [default or Path("evals")]


@dataclass(frozen=True)
class Discovery:
    specs: list[EvalSpec]
    broken: dict[Path, ConfigError]


def discover_evals(folders: list[Path] | None = None) -> Discovery:
    """Load every ``eval.yaml`` below the folders. A broken eval is reported, not fatal,
    so one typo does not take the other evals out of the UI."""
    if folders is None:
        folders = evals_dirs()
    specs: list[EvalSpec] = []
    broken: dict[Path, ConfigError] = {}
    names: set[str] = set()
    for folder in folders:
        for path in sorted(folder.glob("**/eval.yaml")):
            try:
                spec = load_eval(path)
            except ConfigError as exc:
                log.warning("skipping %s:\n%s", path, exc)
                broken[path] = exc
                continue
            if spec.name in names:
                log.warning("skipping %s: another eval is already named %r", path, spec.name)
                continue
            names.add(spec.name)
            specs.append(spec)
    return Discovery(specs=specs, broken=broken)
