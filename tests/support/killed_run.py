"""Killing a real `evalh run` mid-run, the way a user's kill -9 (or an OOM kill) does."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

POLL_S = 0.2  # between two looks; the deadline, not this, bounds the wait


def kill_evalh_when(argv: list[str], env: dict[str, str], cwd: Path, log: Path, ready: Callable[[], bool],
                    *, what: str, timeout_s: float = 300) -> None:
    """Start ``argv`` in its own session, wait until ``ready()``, then SIGKILL its whole group.

    Only the run's own group dies: what it started in a session of its own (a service) or in
    the engine (a container) is left, as after a real kill. Raises, with the output, when the
    run exits first or ``timeout_s`` passes.
    """
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    try:
        while not ready():
            if proc.poll() is not None:
                raise RuntimeError(f"evalh exited with {proc.returncode} before {what}:\n{log.read_text()[-4000:]}")
            if time.monotonic() >= deadline:
                raise RuntimeError(f"no {what} within {timeout_s} s:\n{log.read_text()[-4000:]}")
            time.sleep(POLL_S)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
