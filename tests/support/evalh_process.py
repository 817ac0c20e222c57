"""`evalh` run as a real process, as its users run it."""

from __future__ import annotations

import subprocess
import sys

EVALH = [sys.executable, "-m", "evalh_pipeline.cli"]


def run_evalh(args, env, cwd, timeout=120):
    """`evalh ARGS` as a real process; returns the CompletedProcess."""
    return subprocess.run([*EVALH, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
