"""Issue 25 item 1: a system that leaves a daemon behind, or a Ctrl-C during a cell, never holds
`evalh run` up (real `evalh` processes; the agent's helpers keep evalh's pipes open).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.evalh_process import EVALH
from tests.reporting_agent import alive, end_helpers, reporting_eval, reports

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("mode", ["daemon", "daemon_hang"])
def test_a_system_that_leaves_a_daemon_behind_never_holds_evalh_up(tmp_path: Path, env: dict[str, str],
                                                                    mode: str) -> None:
    folder = tmp_path / mode
    # The hanging system's cells end at their 2 s timeout; the other's return at once, and a
    # timeout as short would take a slow start of its helper on a loaded machine for a hang.
    path = reporting_eval(folder, mode, cases=2, timeout=2 if mode == "daemon_hang" else 120)
    # evalh's own stdout and stderr are pipes the helpers inherit and keep open: only the
    # process's exit is waited for, never the pipes' end.
    proc = subprocess.Popen([*EVALH, "run", str(path)], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        code = proc.wait(timeout=300)
        reported = reports(folder)
        assert len(reported) == 2 and all(alive(r["helper"]) for r in reported)  # still there, evalh is not
        # Every cell of the hanging system timed out: no system answered, so the run fails (2).
        assert code == (2 if mode == "daemon_hang" else 0)
        (run_dir,) = (folder / "runs").glob("2*")
        traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
        errors = {(t.get("error") or {}).get("type") for t in traces}
        assert errors == ({"timeout"} if mode == "daemon_hang" else {None})
    finally:
        if proc.poll() is None:
            proc.kill()
        end_helpers(reports(folder))


def test_ctrl_c_during_a_cell_exits_130_at_once_and_says_how_to_finish(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "interrupted"
    path = reporting_eval(folder, "daemon_hang", cases=2)
    proc = subprocess.Popen([*EVALH, "run", str(path)], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / "stderr.txt", "w"))
    try:
        deadline = time.monotonic() + 240
        while not reports(folder):
            assert time.monotonic() < deadline and proc.poll() is None, "the system was never called"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C sends
        # "At once": long before the cell's 120 s timeout, and whatever the helper does.
        assert proc.wait(timeout=60) == 130
        stderr = (tmp_path / "stderr.txt").read_text()
        assert "interrupted. Finish it with: evalh run" in stderr and "--resume" in stderr, stderr
        assert "Traceback" not in stderr
    finally:
        if proc.poll() is None:
            proc.kill()
        end_helpers(reports(folder))
