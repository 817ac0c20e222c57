"""What evalh reads from the process environment, read once at the edge and handed down.

The CLI (one :class:`Settings` per command) and the Dagster layer (when it loads the evals)
call :meth:`Settings.from_environment`; everything below them takes the settings as an
argument (``load_eval(..., settings=)``, then ``EvalSpec.settings``) and never reads
``os.environ`` for these itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

# The runs folder of the default output (``output: runs``) and of a bare run id on the command line.
RUNS_DIR_ENV = "EVALH_RUNS_DIR"
# Working copies of runs published to URLs, fetched runs and store exports (default ~/.cache/evalh).
CACHE_DIR_ENV = "EVALH_CACHE_DIR"
# Where `evalh view` answers (links from Dagster and `evalh run` to a run's page); the port `./dev ui` uses.
VIEWER_URL_ENV = "EVALH_VIEWER_URL"
DEFAULT_VIEWER_URL = "http://127.0.0.1:8790"
# Where the Dagster UI answers (the viewer's links back to a run's Dagster runs); `./dev ui`'s address.
DAGSTER_URL_ENV = "EVALH_DAGSTER_URL"
DEFAULT_DAGSTER_URL = "http://127.0.0.1:3000"


@dataclass(frozen=True)
class Settings:
    """The environment of one process, as evalh uses it.

    ``env`` is the host environment: ``${VAR}`` expansion and the evaluators' context
    (credentials, base URLs) read it. It is left out of ``repr`` (it holds secrets).
    """

    env: Mapping[str, str] = field(default_factory=dict, repr=False)
    # $EVALH_RUNS_DIR, resolved: where the default output `runs` and bare run ids live (None: ./runs).
    runs_dir: Path | None = None
    # $EVALH_CACHE_DIR (default ~/.cache/evalh), resolved; None only in hand-made settings.
    cache_dir: Path | None = None
    # $EVALH_VIEWER_URL without a trailing slash (default http://127.0.0.1:8790): links, not a liveness claim.
    viewer_url: str = DEFAULT_VIEWER_URL
    # $EVALH_DAGSTER_URL without a trailing slash (default http://127.0.0.1:3000): links, as viewer_url.
    dagster_url: str = DEFAULT_DAGSTER_URL

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings of ``environ`` (default: this process's environment), read now."""
        env = dict(os.environ if environ is None else environ)
        runs_dir = env.get(RUNS_DIR_ENV)
        cache_dir = Path(env.get(CACHE_DIR_ENV) or Path.home() / ".cache" / "evalh").expanduser().resolve()
        return cls(env=env, runs_dir=Path(runs_dir).resolve() if runs_dir else None, cache_dir=cache_dir,
                   viewer_url=_base_url(env.get(VIEWER_URL_ENV), DEFAULT_VIEWER_URL),
                   dagster_url=_base_url(env.get(DAGSTER_URL_ENV), DEFAULT_DAGSTER_URL))

    @property
    def cache(self) -> Path:
        """``cache_dir``; an error when these settings were made by hand without one."""
        if self.cache_dir is None:
            raise ValueError("these settings have no cache_dir: use Settings.from_environment()")
        return self.cache_dir


def _base_url(configured: str | None, default: str) -> str:
    """``configured`` without surrounding blanks and trailing slash, or ``default`` when unset or blank."""
    value = (configured or "").strip().rstrip("/")
    return value or default
