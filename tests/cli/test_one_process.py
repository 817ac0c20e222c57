"""`evalh run` is one process: the Dagster steps run the cells in it (no engine process, no
recorder). Real `evalh` processes; the agent reports its process id.

What that means when the system misbehaves or the user stops it (issue 25) is in
tests/adversarial/test_run_finishes_daemons_and_ctrl_c.py and its neighbours.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.evalh_process import EVALH
from tests.reporting_agent import reporting_eval, reports

pytestmark = pytest.mark.e2e


def test_the_cells_run_in_the_evalh_process_itself(tmp_path: Path, env: dict[str, str]) -> None:
    path = reporting_eval(tmp_path / "pids", "ok")
    proc = subprocess.run([*EVALH, "run", str(path)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reported = reports(tmp_path / "pids")
    assert len(reported) == 3
    assert len({r["pid"] for r in reported}) == 1  # one process: evalh's own (no engine process)
    (run_dir,) = (tmp_path / "pids" / "runs").glob("2*")
    assert (run_dir / "summary.yaml").exists()

