"""A killed `evalh run` is marked failed in the UI by the code location's sensor, under a real daemon.

Against the session's `dagster dev` (webserver + daemon): `evalh run` processes of the
`abandoned` eval execute their Dagster run in process on that instance, held mid-`traces` by
the hanging agent (its last two cases wait while the file `hold` exists, so no run can finish
before the test lets it). One is killed with SIGKILL: the `evalh_abandoned_cli_runs` sensor
marks its run failed, saying the evalh that ran it ended and which command finishes the eval
run, and that command does. An `evalh run` still alive, and a re-execution from the UI of a
killed CLI run (it carries the parent's `evalh/trigger=cli` tag), stay running through the
sensor's evaluations, then succeed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import dagster as dg
import pytest

from evalh_pipeline.defs.evals.names import ABANDONED_RUNS_SENSOR
from evalh_pipeline.runner.stages import load_summary
from evalh_pipeline.store.run_dir import RunDirectory
from tests.support.evalh_process import EVALH, run_evalh
from tests.e2e.support import HANGING_CASES
from tests.e2e.support import finished_run, graphql, sensor_ticks_after, wait_for

pytestmark = pytest.mark.e2e

EVAL = "abandoned"
HANGING = {f"case_{i}" for i in (HANGING_CASES - 2, HANGING_CASES - 1)}
# Generous bounds for a loaded two-core machine, never a pace: the sensor looks every 10 s.
SENSOR_TIMEOUT = 300
RUN_TIMEOUT = 300

# What the UI's **Re-execute all** ▾ → **From failure** sends: the parent's id and the strategy
# (Dagster finds the job through the parent's code location origin, which evalh's runs name).
REEXECUTE = """
mutation Reexecute($params: ReexecutionParams!) {
  launchPipelineReexecution(reexecutionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
  }
}
"""


def _folder(dagster_dev) -> Path:
    return dagster_dev.repo / "evals" / EVAL


def _called(folder: Path, pid: int) -> set[str]:
    """The cases process ``pid`` has called the system for (the agent's calls.log)."""
    log = folder / "calls.log"
    lines = log.read_text().splitlines() if log.exists() else []
    return {case for case, _variant, caller in map(json.loads, lines) if caller == pid}


def _cli_runs(instance: dg.DagsterInstance) -> dict[str, dg.DagsterRun]:
    return {r.run_id: r for r in instance.get_runs(dg.RunsFilter(job_name=f"{EVAL}__run",
                                                                tags={"evalh/trigger": "cli"}))
            if r.parent_run_id is None}


def _hanging_evalh_run(dagster_dev, tmp_path: Path) -> tuple[subprocess.Popen, dg.DagsterRun]:
    """`evalh run` of the eval as a process on the UI's instance, once it hangs on its last
    cases; and its Dagster run."""
    folder = _folder(dagster_dev)
    instance = dagster_dev.instance()
    before = set(_cli_runs(instance))
    proc = subprocess.Popen([*EVALH, "run", str(folder / "eval.yaml")], cwd=tmp_path,
                            env={**os.environ, "DAGSTER_HOME": str(dagster_dev.home)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: proc.poll() is not None or HANGING <= _called(folder, proc.pid), RUN_TIMEOUT,
                 "evalh to hang on the last cases", dagster_dev.log)
        assert proc.poll() is None, f"evalh exited with {proc.returncode} while its cases hang"
        (run,) = [r for run_id, r in _cli_runs(instance).items() if run_id not in before]
        assert run.status == dg.DagsterRunStatus.STARTED
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc, run


def _killed(dagster_dev, tmp_path: Path) -> tuple[dg.DagsterRun, float]:
    """A CLI run whose evalh was killed (SIGKILL) mid-`traces`; and when it was killed."""
    proc, run = _hanging_evalh_run(dagster_dev, tmp_path)
    proc.send_signal(signal.SIGKILL)  # no chance to record anything
    proc.wait()
    return run, time.monotonic()


def _failure_message(instance: dg.DagsterInstance, run_id: str) -> str:
    (failure,) = instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
    return failure.dagster_event.message


def _sensor_looked_twice(instance: dg.DagsterInstance, since: float, log: Path) -> None:
    """Two evaluations of the sensor started after ``since`` have finished."""
    wait_for(lambda: len(sensor_ticks_after(instance, ABANDONED_RUNS_SENSOR, since)) >= 2, SENSOR_TIMEOUT,
             f"two evaluations of {ABANDONED_RUNS_SENSOR}", log)


def test_a_killed_evalh_run_is_marked_failed_with_the_command_that_finishes_it(dagster_dev, tmp_path):
    instance = dagster_dev.instance()
    folder = _folder(dagster_dev)
    (folder / "hold").write_text("")
    live, live_run = _hanging_evalh_run(dagster_dev, tmp_path)
    try:
        killed, killed_at = _killed(dagster_dev, tmp_path)

        failed = wait_for(lambda: (r := instance.get_run_by_id(killed.run_id)) and r.is_finished and r,
                          SENSOR_TIMEOUT, "the sensor to mark the killed run failed", dagster_dev.log)
        print(f"killed evalh's run marked failed {time.monotonic() - killed_at:.1f} s after the kill")
        assert failed.status == dg.DagsterRunStatus.FAILURE
        run_dir = folder / "runs" / killed.tags["dagster/partition"]
        resume = ["run", str(folder / "eval.yaml"), "--resume", str(run_dir)]
        message = _failure_message(instance, killed.run_id)
        assert message == ("the evalh process that ran this ended without finishing it (killed?); "
                           f"finish the eval run with: evalh {' '.join(resume)}")

        # The evalh still running is left alone, however often the sensor looks.
        _sensor_looked_twice(instance, time.time(), dagster_dev.log)
        assert instance.get_run_by_id(live_run.run_id).status == dg.DagsterRunStatus.STARTED
        (folder / "hold").unlink()
        assert live.wait(timeout=RUN_TIMEOUT) == 0
        assert instance.get_run_by_id(live_run.run_id).status == dg.DagsterRunStatus.SUCCESS
    finally:
        (folder / "hold").unlink(missing_ok=True)
        if live.poll() is None:
            live.kill()
            live.wait()

    # The command the message gives finishes the eval run: only the cells without a trace run.
    finished = run_evalh(resume, {**os.environ, "DAGSTER_HOME": str(dagster_dev.home)}, tmp_path,
                         timeout=RUN_TIMEOUT)
    assert finished.returncode == 0, finished.stderr
    summary = load_summary(RunDirectory(run_dir))
    assert summary.completeness is not None and summary.completeness.complete


def test_a_ui_reexecution_of_a_killed_cli_run_is_never_marked_failed(dagster_dev, tmp_path):
    instance = dagster_dev.instance()
    folder = _folder(dagster_dev)
    (folder / "hold").write_text("")
    try:
        killed, _ = _killed(dagster_dev, tmp_path)
        wait_for(lambda: (r := instance.get_run_by_id(killed.run_id)) and r.is_finished, SENSOR_TIMEOUT,
                 "the sensor to mark the killed run failed", dagster_dev.log)

        # Counted before the launch (the killed evalh calls no more): the re-execution can reach
        # its cells before the test sees it start.
        log = folder / "calls.log"
        calls = len(log.read_text().splitlines())
        # A re-execution from the UI ("From failure"): the parent's job, tags (its partition among them) and id.
        launched = graphql(dagster_dev.url, REEXECUTE, {"params": {
            "parentRunId": killed.run_id, "strategy": "FROM_FAILURE"}})["launchPipelineReexecution"]
        assert launched["__typename"] == "LaunchRunSuccess", launched
        child_id = launched["run"]["runId"]
        child = wait_for(lambda: (r := instance.get_run_by_id(child_id)) and r.status == dg.DagsterRunStatus.STARTED
                         and r, RUN_TIMEOUT, "the re-execution to start", dagster_dev.log)
        assert child.tags["evalh/trigger"] == "cli" and child.parent_run_id == killed.run_id
        wait_for(lambda: {json.loads(line)[0] for line in log.read_text().splitlines()[calls:]} >= HANGING,
                 RUN_TIMEOUT, "the re-execution to hang on the last cases", dagster_dev.log)

        _sensor_looked_twice(instance, time.time(), dagster_dev.log)
        assert instance.get_run_by_id(child_id).status == dg.DagsterRunStatus.STARTED
    finally:
        (folder / "hold").unlink(missing_ok=True)
    done = finished_run(instance, f"{EVAL}__run", dagster_dev.log, killed.tags["dagster/partition"],
                        parent=killed.run_id)
    assert done.status == dg.DagsterRunStatus.SUCCESS
