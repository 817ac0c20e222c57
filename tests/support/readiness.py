"""Waiting for a server a test started as a process until it answers over HTTP."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from pathlib import Path

POLL_S = 0.2  # between two tries; the deadline, not this, bounds the wait
LOG_TAIL = 4000  # characters of the process's output shown when it fails


def wait_until_answering(proc: subprocess.Popen, url: str, log: Path, *, what: str, timeout_s: float) -> None:
    """Until ``url`` answers 200. Raises RuntimeError, with the tail of the process's output
    (``log``), when ``proc`` (``what`` names it) exits first or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() >= deadline:
            raise RuntimeError(f"{what} did not answer {url} within {timeout_s} s:\n{_tail(log)}")
        time.sleep(POLL_S)


def _tail(log: Path) -> str:
    try:
        return log.read_text(errors="replace")[-LOG_TAIL:]
    except OSError:
        return "(no output)"
