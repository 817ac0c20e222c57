"""``isolation: process`` is the choice for untrusted targets: one that ends its interpreter
(``os._exit``, an abort) errors only its own cell, and the run goes on to its summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.support.evalh_process import run_evalh

AGENT = '''
import asyncio, os

def _maybe_crash(case):
    if case["input"]["how"] == "exit":
        os._exit(3)
    if case["input"]["how"] == "abort":
        os.abort()

def sync_target(case, variant):
    _maybe_crash(case)
    return {"final_answer": "ok"}

async def async_target(case, variant):
    await asyncio.sleep(0)
    _maybe_crash(case)
    return {"final_answer": "ok"}
'''

HOW = ["fine", "exit", "fine", "abort", "fine"]


@pytest.mark.e2e
def test_a_target_that_kills_its_interpreter_errors_only_its_cell(tmp_path: Path, env: dict[str, str]) -> None:
    folder = tmp_path / "crashing"
    folder.mkdir()
    (folder / "agent.py").write_text(AGENT)
    (folder / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"how": how}}) + "\n" for i, how in enumerate(HOW)))
    common = "isolation: process, workers: 1, timeout_seconds: 60"
    path = folder / "eval.yaml"
    path.write_text(f"""
eval: {{name: crashing}}
dataset: {{type: jsonl, path: cases.jsonl}}
systems:
  - {{name: sync, adapter: python_function, target: "agent:sync_target", {common}}}
  - {{name: async, adapter: python_function, target: "agent:async_target", {common}}}
evaluators:
  - {{name: ok, type: contains_text, config: {{any_of: [ok]}}}}
run: {{max_concurrency: 2, per_variant_concurrency: 1}}
output: [{{type: local_files, path: {folder / "runs"}}}]
""")
    done = run_evalh(["run", str(path)], env, tmp_path, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = [p for p in (folder / "runs").iterdir() if not p.name.startswith(".")]
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == 2 * len(HOW)
    for trace in traces:
        crashed = HOW[int(trace["case_id"][1:])] != "fine"
        assert (trace["error"] is not None) == crashed, trace
        if not crashed:
            assert trace["output"]["final_answer"] == "ok"
    summary = yaml.safe_load((run_dir / "summary.yaml").read_text())
    assert sorted((v["name"], v["cases_passed"]) for v in summary["variants"]) == [("async", 3), ("sync", 3)]
