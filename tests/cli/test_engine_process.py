"""`evalh run` calls the system from an engine process of its own while Dagster starts and
records in the process the user started (defs/overlap.py): what that means for the user.

Real `evalh` processes; the agents below report their process ids, kill their process, or
wait to be killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import EVALH, run_evalh, write_eval

pytestmark = pytest.mark.e2e

AGENT = '''
import asyncio, json, os, time
from pathlib import Path

async def run(case, variant):
    folder = Path(variant["config"]["log_dir"])
    (folder / f"{case['id']}-{variant['name']}.json").write_text(json.dumps({"pid": os.getpid(), "ppid": os.getppid()}))
    mode = variant["config"].get("mode")
    if mode == "exit" and case["id"] == "case_3":
        os._exit(7)
    if mode == "hang":
        await asyncio.sleep(3600)
    return {"final_answer": "Paris", "tool_calls": [{"name": "lookup", "arguments": {}}]}
'''


def _eval(folder: Path, mode: str, cases: int = 6) -> Path:
    path = write_eval(folder, cases=cases, systems=f"""
  - name: base
    adapter: python_function
    target: reporting_agent:run
    log_dir: {folder / "log"}
    mode: {mode}
""")
    (folder / "log").mkdir()
    (folder / "reporting_agent.py").write_text(AGENT)
    path.write_text(path.read_text().replace("max_concurrency: 4", "max_concurrency: 1"))  # cells in order
    return path


def _reports(folder: Path) -> list[dict[str, int]]:
    return [json.loads(p.read_text()) for p in sorted((folder / "log").glob("*.json"))]


def test_the_cells_run_in_a_child_of_the_evalh_process(tmp_path: Path, env: dict[str, str]) -> None:
    path = _eval(tmp_path / "pids", "ok")
    proc = subprocess.Popen([*EVALH, "run", str(path)], env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, out + err
    reports = _reports(tmp_path / "pids")
    assert len(reports) == 6
    # One engine process for the run, started by evalh itself, which recorded the Dagster run.
    assert {r["ppid"] for r in reports} == {proc.pid}
    assert {r["pid"] for r in reports} != {proc.pid} and len({r["pid"] for r in reports}) == 1
    (run_dir,) = (tmp_path / "pids" / "runs").glob("2*")
    assert (run_dir / "summary.yaml").exists()


def test_a_system_that_ends_its_process_fails_the_run_with_one_clear_line(tmp_path: Path, env: dict[str, str]) -> None:
    path = _eval(tmp_path / "exits", "exit")
    done = run_evalh(["run", str(path)], env, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "engine process ended (exit code 7)" in errors[0], done.stderr
    assert "Traceback" not in done.stderr
    # What ran before it is kept for --resume.
    (run_dir,) = (tmp_path / "exits" / "runs").glob("2*")
    assert len((run_dir / "traces.jsonl").read_text().splitlines()) == 3


def test_killing_evalh_stops_its_engine_process(tmp_path: Path, env: dict[str, str]) -> None:
    path = _eval(tmp_path / "hangs", "hang", cases=2)
    proc = subprocess.Popen([*EVALH, "run", str(path)], env=env, cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not _reports(tmp_path / "hangs"):
            assert time.monotonic() < deadline and proc.poll() is None, "the system was never called"
            time.sleep(0.05)
        (report,) = _reports(tmp_path / "hangs")
        os.kill(proc.pid, signal.SIGKILL)  # a CI timeout, say: no chance to clean up
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _alive(report["pid"]):
            assert time.monotonic() < deadline, "the engine process outlived evalh"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_a_dagster_home_that_is_not_a_folder_stops_the_run_before_any_call(tmp_path: Path, env: dict[str, str]) -> None:
    path = _eval(tmp_path / "home", "ok")
    not_a_folder = tmp_path / "dagster_home_file"
    not_a_folder.write_text("")
    done = run_evalh(["run", str(path)], {**env, "DAGSTER_HOME": str(not_a_folder)}, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "is not a directory" in errors[0], done.stderr
    assert _reports(tmp_path / "home") == []  # the system was never called
