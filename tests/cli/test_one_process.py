"""`evalh run` is one process: the Dagster steps run the cells in it (no engine process, no
recorder). What that means for the user when the system misbehaves or the user stops it.

Real `evalh` processes; the agents below report their process ids, leave daemons behind,
or wait to be interrupted.
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

from tests.conftest import EVALH, run_evalh, write_eval

pytestmark = pytest.mark.e2e

AGENT = '''
import asyncio, json, os, subprocess, sys, time
from pathlib import Path

async def run(case, variant):
    folder = Path(variant["config"]["log_dir"])
    mode = variant["config"].get("mode")
    report = {"pid": os.getpid()}
    if mode in ("daemon", "daemon_hang"):
        # A helper in a session of its own that keeps the inherited stdout and stderr open.
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"], start_new_session=True)
        report["helper"] = helper.pid
    (folder / f"{case['id']}-{variant['name']}.json").write_text(json.dumps(report))
    if mode in ("hang", "daemon_hang"):
        await asyncio.sleep(3600)
    return {"final_answer": "Paris", "tool_calls": [{"name": "lookup", "arguments": {}}]}
'''


def _eval(folder: Path, mode: str, cases: int = 3, timeout: float = 120) -> Path:
    path = write_eval(folder, cases=cases, systems=f"""
  - name: base
    adapter: python_function
    target: reporting_agent:run
    timeout_seconds: {timeout}
    log_dir: {folder / "log"}
    mode: {mode}
""")
    (folder / "log").mkdir()
    (folder / "reporting_agent.py").write_text(AGENT)
    path.write_text(path.read_text().replace("max_concurrency: 4", "max_concurrency: 1"))  # cells in order
    return path


def _reports(folder: Path) -> list[dict[str, int]]:
    return [json.loads(p.read_text()) for p in sorted((folder / "log").glob("*.json"))]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _end_helpers(reports: list[dict[str, int]]) -> None:
    for report in reports:
        if "helper" in report and _alive(report["helper"]):
            os.kill(report["helper"], signal.SIGKILL)


def test_the_cells_run_in_the_evalh_process_itself(tmp_path: Path, env: dict[str, str]) -> None:
    path = _eval(tmp_path / "pids", "ok")
    proc = subprocess.run([*EVALH, "run", str(path)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reports = _reports(tmp_path / "pids")
    assert len(reports) == 3
    assert len({r["pid"] for r in reports}) == 1  # one process: evalh's own (no engine process)
    (run_dir,) = (tmp_path / "pids" / "runs").glob("2*")
    assert (run_dir / "summary.yaml").exists()


@pytest.mark.parametrize("mode", ["daemon", "daemon_hang"])
def test_a_system_that_leaves_a_daemon_behind_never_holds_evalh_up(tmp_path: Path, env: dict[str, str],
                                                                    mode: str) -> None:
    folder = tmp_path / mode
    path = _eval(folder, mode, cases=2, timeout=2)
    # evalh's own stdout and stderr are pipes the helpers inherit and keep open: only the
    # process's exit is waited for, never the pipes' end.
    proc = subprocess.Popen([*EVALH, "run", str(path)], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        code = proc.wait(timeout=300)
        reports = _reports(folder)
        assert len(reports) == 2 and all(_alive(r["helper"]) for r in reports)  # still there, evalh is not
        assert code == 0
        (run_dir,) = (folder / "runs").glob("2*")
        traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
        errors = {(t.get("error") or {}).get("type") for t in traces}
        assert errors == ({"timeout"} if mode == "daemon_hang" else {None})
    finally:
        if proc.poll() is None:
            proc.kill()
        _end_helpers(_reports(folder))


def test_ctrl_c_during_a_cell_exits_130_at_once_and_says_how_to_finish(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "interrupted"
    path = _eval(folder, "daemon_hang", cases=2)
    proc = subprocess.Popen([*EVALH, "run", str(path)], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / "stderr.txt", "w"))
    try:
        deadline = time.monotonic() + 240
        while not _reports(folder):
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
        _end_helpers(_reports(folder))


def test_a_killed_evalh_leaves_no_dagster_run_in_progress_once_resumed(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "killed"
    path = _eval(folder, "hang", cases=2)
    proc = subprocess.Popen([*EVALH, "run", str(path)], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not _reports(folder):
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


def test_a_dagster_home_that_is_not_a_folder_stops_the_run_before_any_call(tmp_path: Path, env: dict[str, str]) -> None:
    path = _eval(tmp_path / "home", "ok")
    not_a_folder = tmp_path / "dagster_home_file"
    not_a_folder.write_text("")
    done = run_evalh(["run", str(path)], {**env, "DAGSTER_HOME": str(not_a_folder)}, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "is not a directory" in errors[0] and str(not_a_folder) in errors[0], done.stderr
    assert _reports(tmp_path / "home") == []  # the system was never called
