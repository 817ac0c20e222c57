"""`evalh` run as a real process, as its users run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EVALH = [sys.executable, "-m", "evalh_pipeline.cli"]


def run_evalh(args, env, cwd, timeout=120):
    """`evalh ARGS` as a real process; returns the CompletedProcess."""
    return subprocess.run([*EVALH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def evalh_env(folder: Path) -> dict[str, str]:
    """Environment for `evalh` processes: a fresh Dagster home and a stub agent's call log in ``folder``."""
    home = folder / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return {**os.environ, "DAGSTER_HOME": str(home), "EVALH_TEST_CALL_LOG": str(folder / "calls.log")}
