"""Find the evals the code location serves: every eval file under the evals folder.

An eval file is any ``*.yaml``/``*.yml`` whose top level has the ``eval:`` key of an eval,
whatever its name: ``eval.yaml``, ``eval_git.yaml``, ``nightly.yml`` (and every file named
``eval.yaml``/``eval.yml``, so a broken one is reported rather than ignored). Cases files,
fixtures and run folders are not evals and are skipped.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from evalh_pipeline.common.settings import Settings
from evalh_pipeline.config import ConfigError, EvalSpec
from evalh_pipeline.runner.loading import load_eval

log = logging.getLogger(__name__)

EVALS_DIR_ENV = "EVALH_EVALS_DIR"
# Folders that never hold eval files: run output, VCS and environments.
_SKIPPED_DIRS = {"runs", ".git", ".venv", "venv", "node_modules", "__pycache__", ".dagster_home"}
_EVAL_KEY = re.compile(r"^eval\s*:", re.M)
# Larger files are data (datasets), not eval configs.
_MAX_EVAL_FILE_BYTES = 1 << 20


def is_eval_file(path: Path) -> bool:
    """A YAML file with the top-level ``eval:`` key of an eval (or named ``eval.yaml``)."""
    if path.name in ("eval.yaml", "eval.yml"):
        return True
    try:
        if path.stat().st_size > _MAX_EVAL_FILE_BYTES:
            return False
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return _EVAL_KEY.search(text) is not None


def eval_files(folder: Path) -> list[Path]:
    """Every eval file below ``folder`` (sorted; skips run output, VCS and environment folders)."""
    found: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in sorted(files):
            if name.endswith((".yaml", ".yml")) and is_eval_file(Path(root) / name):
                found.append(Path(root) / name)
    return found


def project_evals_dir() -> Path:
    """The ``evals/`` folder beside ``definitions.py`` (what ``./dev ui`` serves by default)."""
    return Path(__file__).resolve().parents[2] / "evals"


def visible_in_ui(eval_path: Path, folders: list[Path] | None = None) -> bool:
    """Whether the code location (``folders``, default ``evals_dirs(project_evals_dir())``) serves ``eval_path``."""
    target = eval_path.resolve()
    return any(target.is_relative_to(folder.resolve()) for folder in (folders or evals_dirs(project_evals_dir())))


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


def discover_evals(folders: list[Path] | None = None, settings: Settings | None = None) -> Discovery:
    """Load every eval file below the folders. A broken eval is reported, not fatal,
    so one typo does not take the other evals out of the UI.

    ``settings`` default to the environment, read once here: the Dagster layer's edge (each
    spec carries them on to the sensors and runs that reload it)."""
    if folders is None:
        folders = evals_dirs()
    if settings is None:
        settings = Settings.from_environment()
    specs: list[EvalSpec] = []
    broken: dict[Path, ConfigError] = {}
    names: set[str] = set()
    for folder in folders:
        for path in eval_files(folder):
            try:
                spec = load_eval(path, settings=settings)
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
