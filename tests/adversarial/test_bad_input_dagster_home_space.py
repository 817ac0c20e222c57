"""Issue 25 item 10: a read-only or full `DAGSTER_HOME`, on a real file system (a tmpfs the test
mounts), stops `evalh run` before the first cell with one line naming it; one that fills up
while the cells run ends the run with one line naming it and the `--resume` command that
finishes it, and that command does finish it without calling a cell that has a trace again.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.evalh_process import EVALH, run_evalh

from tests.support.evals import write_eval
from tests.mounts import fill, remount_read_only, tmpfs

pytestmark = pytest.mark.e2e

# A system whose second cell waits for the test's go (a file), so the test can fill the
# instance's file system while the run is under way. Every call is logged, one line per call.
AGENT = '''
import asyncio
from pathlib import Path

async def run(case, variant):
    folder = Path(variant["config"]["log_dir"])
    with (folder / "calls.log").open("a") as log:
        log.write(case["id"] + "\\n")
    if case["id"] == "case_1":
        (folder / "waiting").write_text("")
        while not (folder / "go").exists():
            await asyncio.sleep(0.05)
    return {"final_answer": "Paris", "tool_calls": [{"name": "lookup", "arguments": {}}]}
'''


def _gated_eval(folder: Path, cases: int = 4) -> Path:
    path = write_eval(folder, cases=cases, systems=f"""
  - name: base
    adapter: python_function
    target: gated_agent:run
    timeout_seconds: 600
    log_dir: {folder / "log"}
""")
    (folder / "log").mkdir()
    (folder / "gated_agent.py").write_text(AGENT)
    path.write_text(path.read_text().replace("max_concurrency: 4", "max_concurrency: 1"))  # cells in order
    return path


def _calls(folder: Path) -> list[str]:
    log = folder / "log" / "calls.log"
    return log.read_text().split() if log.exists() else []


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("error:")]


def _home(folder: Path) -> Path:
    (folder / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    return folder


def test_a_read_only_dagster_home_stops_the_run_before_any_call_naming_it(tmp_path: Path,
                                                                          env: dict[str, str]) -> None:
    path = _gated_eval(tmp_path / "ro")
    with tmpfs(tmp_path / "home", "2m") as home:
        _home(home)
        remount_read_only(home)
        done = run_evalh(["run", str(path)], {**env, "DAGSTER_HOME": str(home)}, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = _errors(done.stderr)
    assert len(errors) == 1 and str(home) in errors[0] and "Read-only file system" in errors[0], done.stderr
    assert "Traceback" not in done.stderr and "SQL" not in done.stderr
    assert _calls(tmp_path / "ro") == []  # the system was never called
    assert not (tmp_path / "ro" / "runs").exists() or not any((tmp_path / "ro" / "runs").iterdir())


def test_a_full_dagster_home_stops_the_run_before_any_call_naming_it(tmp_path: Path, env: dict[str, str]) -> None:
    path = _gated_eval(tmp_path / "full")
    with tmpfs(tmp_path / "home", "2m") as home:
        fill(_home(home))
        done = run_evalh(["run", str(path)], {**env, "DAGSTER_HOME": str(home)}, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = _errors(done.stderr)
    assert len(errors) == 1 and str(home) in errors[0] and "free" in errors[0], done.stderr
    assert "Traceback" not in done.stderr and "SQL" not in done.stderr
    assert _calls(tmp_path / "full") == []


def test_a_dagster_home_that_fills_up_mid_run_says_how_to_finish_and_resume_finishes_it(
        tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "midrun"
    path = _gated_eval(folder)
    # Room for the instance check (64 MB free) and the instance's databases, nothing more.
    with tmpfs(tmp_path / "home", "80m") as home:
        run_env = {**env, "DAGSTER_HOME": str(_home(home))}
        proc = subprocess.Popen([*EVALH, "run", str(path)], env=run_env, cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            while not (folder / "log" / "waiting").exists():  # the first cell is done, the second under way
                assert proc.poll() is None, proc.communicate()
                time.sleep(0.05)
            ballast = fill(home)
            (folder / "log" / "go").write_text("")
            stdout, stderr = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert proc.returncode == 2, stdout + stderr
        errors = _errors(stderr)
        run_dir = next((folder / "runs").iterdir())
        resume = f"evalh run {path} --resume {run_dir}"
        assert len(errors) == 1 and str(home) in errors[0] and resume in errors[0], stderr
        assert "Traceback" not in stderr and "[SQL" not in stderr and "<memory at" not in stderr
        traced = {json.loads(line)["case_id"] for line in (run_dir / "traces.jsonl").read_text().splitlines()}
        calls_before = _calls(folder)

        ballast.unlink()  # space freed: the command the error gave finishes the run
        done = run_evalh(["run", str(path), "--resume", str(run_dir)], run_env, tmp_path, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (run_dir / "summary.yaml").exists() and (run_dir / "results.jsonl").exists()
    finished = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    assert sorted(t["case_id"] for t in finished) == [f"case_{i}" for i in range(4)]
    again = _calls(folder)[len(calls_before):]
    assert not set(again) & traced, (traced, again)  # no cell with a trace was called again
    assert sorted(again) == sorted(f"case_{i}" for i in range(4) if f"case_{i}" not in traced)
