"""`evalh view` as a process on a loopback port, for browser tests that follow links into it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.readiness import wait_until_answering

STARTUP_TIMEOUT_S = 120  # a bound, not a pace: the viewer starts in seconds on an idle machine


@dataclass
class ServedRuns:
    """A running viewer: its base URL, the runs folder it serves, and its log."""

    url: str
    runs: Path
    log: Path


@contextmanager
def running_viewer(runs: Path | str, port: int, env: Mapping[str, str], log: Path,
                   cwd: Path | None = None) -> Iterator[str]:
    """`evalh view RUNS --port PORT` in ``env`` (in ``cwd``, default RUNS) until the block ends;
    yields its base URL. RUNS may be a URL (s3://…).

    The port is the caller's: a link made before the viewer starts (``EVALH_VIEWER_URL``) must
    already point at it."""
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "evalh_pipeline.cli", "view", str(runs), "--port", str(port)],
                                cwd=cwd or runs, env=dict(env), stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(proc, f"{url}/healthz", log, what="evalh view", timeout_s=STARTUP_TIMEOUT_S)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
