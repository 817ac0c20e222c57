"""Item 9: a per-cell timeout always ends the cell, and ``evalh`` always exits: a sync
system that never returns, an ``async def`` system that blocks the event loop, in both
isolation modes of python_function."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml

from tests.support.evalh_process import run_evalh

AGENT = '''
import asyncio, os, threading, time
from pathlib import Path

def _note(variant):
    Path(variant["config"]["pid_dir"], f"{os.getpid()}").write_text("")

def never_returns(case, variant):
    if case["input"]["stuck"]:
        _note(variant)
        threading.Event().wait()
    return {"final_answer": "ok"}

async def blocks_the_loop(case, variant):
    if case["input"]["stuck"]:
        _note(variant)
        time.sleep(3600)
    await asyncio.sleep(0)
    return {"final_answer": "ok"}
'''


def _eval(folder: Path, isolation: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "pids").mkdir()
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"stuck": i == 0}}) + "\n" for i in range(3)))
    common = f"timeout_seconds: 1, isolation: {isolation}, pid_dir: {folder / 'pids'}"
    path = folder / "eval.yaml"
    path.write_text(f"""
eval: {{name: {folder.name}}}
dataset: {{type: jsonl, path: cases.jsonl}}
systems:
  - {{name: sync, adapter: python_function, target: "agent:never_returns", {common}}}
  - {{name: async, adapter: python_function, target: "agent:blocks_the_loop", {common}}}
evaluators:
  - {{name: ok, type: contains_text, config: {{any_of: [ok]}}}}
# One call per variant at a time: in thread mode the calls in flight on a loop that a
# target blocks stall with it (documented); the cells after it must not.
run: {{max_concurrency: 2, per_variant_concurrency: 1}}
output: [{{type: local_files, path: {folder / "runs"}}}]
""")
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[-1][:3]


@pytest.mark.e2e
@pytest.mark.parametrize("isolation", ["thread", "process"])
def test_stuck_systems_time_out_and_evalh_exits(tmp_path: Path, env: dict[str, str], isolation: str) -> None:
    path = _eval(tmp_path / f"stuck_{isolation}", isolation)
    started = time.monotonic()
    done = run_evalh(["run", str(path)], env, tmp_path, timeout=240)  # a hang fails here
    assert done.returncode == 0, done.stdout + done.stderr
    assert time.monotonic() - started < 200
    (run_dir,) = [p for p in (path.parent / "runs").iterdir() if not p.name.startswith(".")]
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    errors = {(t["variant_name"], t["case_id"]): (t["error"] or {}).get("type") for t in traces}
    assert errors == {("sync", "c0"): "timeout", ("sync", "c1"): None, ("sync", "c2"): None,
                      ("async", "c0"): "timeout", ("async", "c1"): None, ("async", "c2"): None}
    summary = yaml.safe_load((run_dir / "summary.yaml").read_text())
    assert all(v["cases_passed"] == 2 for v in summary["variants"])
    if isolation == "process":
        # The timed-out calls' worker processes were killed, not left behind.
        pids = [int(p.name) for p in (path.parent / "pids").iterdir()]
        assert len(pids) == 2 and not any(_alive(pid) for pid in pids)
