"""A `python_function` system that reports its process id and can misbehave, for the tests of
what `evalh run` does when a system leaves daemons behind, hangs, or the user stops it.

``mode``: ``ok``; ``hang`` (waits far beyond any cell timeout); ``daemon`` (starts a helper in a
session of its own that keeps the inherited stdout and stderr open); ``daemon_hang`` (both).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from tests.support.evals import write_eval

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


def reporting_eval(folder: Path, mode: str, cases: int = 3, timeout: float = 120) -> Path:
    """An eval in ``folder`` whose one variant runs the reporting agent in ``mode``, one cell at a time."""
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


def reports(folder: Path) -> list[dict[str, int]]:
    """What each call of the agent reported (its pid, its helper's pid), in cell order."""
    return [json.loads(p.read_text()) for p in sorted((folder / "log").glob("*.json"))]


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def end_helpers(reports: list[dict[str, int]]) -> None:
    """Kill the helpers the agent left behind."""
    for report in reports:
        if "helper" in report and alive(report["helper"]):
            os.kill(report["helper"], signal.SIGKILL)
