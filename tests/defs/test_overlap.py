"""defs/overlap.py without fork (not Linux, or a thread already running): the engine runs on
the calling thread while a second thread starts Dagster; the run is the same."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.defs import overlap
from evalh_pipeline.defs.run_options import RunOptions
from evalh_pipeline.store.run_dir import new_run_id
from tests.conftest import write_eval

pytestmark = pytest.mark.integration

AGENT = '''
import json, os
from pathlib import Path

async def run(case, variant):
    Path(variant["config"]["log_dir"], case["id"] + "-" + variant["name"]).write_text(json.dumps(os.getpid()))
    return {"final_answer": "Paris", "tool_calls": [{"name": "lookup", "arguments": {}}]}
'''


def test_without_fork_the_cells_run_in_this_process_and_the_run_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = tmp_path / "threads"
    log = tmp_path / "log"
    log.mkdir()
    systems = "".join(f"""
  - name: {name}
    adapter: python_function
    target: pid_agent:run
    log_dir: {log}
""" for name in ("base", "other"))
    path = write_eval(folder, cases=4, systems=systems)
    (folder / "pid_agent.py").write_text(AGENT)
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setattr(overlap, "fork_is_safe", lambda: False)
    spec = load_eval(path)

    outcome = overlap.run_overlapped(spec, new_run_id(spec.name), RunOptions())

    assert {json.loads(p.read_text()) for p in log.iterdir()} == {os.getpid()}
    assert len(list(log.iterdir())) == 8
    assert [v.name for v in outcome.summary.variants] == ["base", "other"]
    assert outcome.summary.completeness is not None and outcome.summary.completeness.complete
    assert len(outcome.dagster_run_ids) == 1
