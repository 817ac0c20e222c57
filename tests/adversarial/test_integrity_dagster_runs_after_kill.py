"""Issue 25 item 9: a killed `evalh run` leaves no Dagster run "in progress" once the eval run is resumed."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import dagster as dg
import pytest

from tests.support.evalh_process import EVALH, run_evalh
from tests.reporting_agent import reporting_eval, reports

pytestmark = pytest.mark.e2e


def test_a_killed_evalh_leaves_no_dagster_run_in_progress_once_resumed(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "killed"
    path = reporting_eval(folder, "hang", cases=2)
    proc = subprocess.Popen([*EVALH, "run", str(path)], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not reports(folder):
            assert time.monotonic() < deadline and proc.poll() is None, "the system was never called"
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)  # a CI timeout, say: no chance to clean up
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    (run_dir,) = (folder / "runs").glob("2*")
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        (killed,) = instance.get_runs(dg.RunsFilter(job_name="killed__run"))
    assert killed.status == dg.DagsterRunStatus.STARTED and killed.tags["dagster/partition"] == run_dir.name

    path.write_text(path.read_text().replace("mode: hang", "mode: ok"))
    resumed = run_evalh(["run", str(path), "--resume", str(run_dir)], env, tmp_path, timeout=300)

    assert resumed.returncode == 0, resumed.stderr
    assert f"marked Dagster run {killed.run_id} of {run_dir.name} failed" in resumed.stderr
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        runs = {r.run_id: r for r in instance.get_runs(dg.RunsFilter(job_name="killed__run"))}
        (failure,) = [r for r in instance.all_logs(killed.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)]
    assert runs[killed.run_id].status == dg.DagsterRunStatus.FAILURE
    assert "ended without finishing it" in failure.dagster_event.message
    assert not [r for r in runs.values() if not r.is_finished]
    assert {r.tags["dagster/partition"] for r in runs.values()} == {run_dir.name}
