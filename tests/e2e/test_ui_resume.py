"""Resuming a killed run from the UI, in a real browser against `dagster dev`: the docs' route, word for word.

A run of the `killable` eval is launched, and its run worker is killed (SIGKILL) while the
cells of four cases have a trace and the cells of two hang; Dagster's code server marks the
run failed. From the UI, "From failure" on that run, or materializing `traces` for its
partition, finishes it: only the cells without a trace call the system (its calls.log).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import dagster as dg
import pytest

from tests.e2e.browser import documentation, ui_page
from tests.e2e.support import HANGING_CASES, finished_run, graphql, materialized, wait_for

pytestmark = pytest.mark.e2e

EVAL = "killable"
HANGING = {(f"case_{i}", v) for i in (HANGING_CASES - 2, HANGING_CASES - 1) for v in ("base", "candidate")}
ALL_CELLS = {(f"case_{i}", v) for i in range(HANGING_CASES) for v in ("base", "candidate")}

LAUNCH = """
mutation Launch($params: ExecutionParams!) {
  launchPipelineExecution(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message }
  }
}
"""


def _calls(folder: Path) -> list[tuple[str, str, int]]:
    log = folder / "calls.log"
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()] if log.exists() else []


def _trace_cells(run_dir: Path) -> list[tuple[str, str]]:
    traces = run_dir / "traces.jsonl"
    if not traces.exists():
        return []
    cells = []
    for line in traces.read_text().splitlines():
        trace = json.loads(line)
        cells.append((trace["case_id"], trace["variant_name"]))
    return cells


def _killed_run(dagster_dev, partition: str) -> tuple[dg.DagsterRun, int]:
    """A run of ``partition`` whose worker was killed mid-`traces`; and how many calls were logged by then."""
    instance = dagster_dev.instance()
    folder = dagster_dev.repo / "evals" / EVAL
    run_dir = folder / "runs" / partition
    (folder / "hold").write_text("")
    instance.add_dynamic_partitions(f"{EVAL}__runs", [partition])
    before = len(_calls(folder))
    launched = graphql(dagster_dev.url, LAUNCH, {"params": {
        "selector": {"repositoryLocationName": "evalh_pipeline", "repositoryName": "__repository__",
                     "pipelineName": f"{EVAL}__run"},
        "executionMetadata": {"tags": [{"key": "dagster/partition", "value": partition}]},
        "runConfigData": {},
    }})["launchPipelineExecution"]
    assert launched["__typename"] == "LaunchRunSuccess", launched
    run_id = launched["run"]["runId"]

    # Every cell that does not hang has its trace, and every hanging cell has called the system.
    wait_for(lambda: set(_trace_cells(run_dir)) == ALL_CELLS - HANGING
             and {c[:2] for c in _calls(folder)[before:]} == ALL_CELLS, 300,
             "the run to hang on its last two cases", dagster_dev.log)
    (worker,) = {c[2] for c in _calls(folder)[before:]}  # isolation: thread, so the run worker itself
    os.kill(worker, signal.SIGKILL)
    run = wait_for(lambda: (r := instance.get_run_by_id(run_id)) and r.is_finished and r, 120,
                   "Dagster to mark the killed run failed", dagster_dev.log)
    assert run.status == dg.DagsterRunStatus.FAILURE
    (folder / "hold").unlink()
    return run, len(_calls(folder))


def _assert_resumed(dagster_dev, partition: str, calls_before: int) -> None:
    folder = dagster_dev.repo / "evals" / EVAL
    called = [c[:2] for c in _calls(folder)[calls_before:]]
    assert sorted(called) == sorted(HANGING)  # only the cells without a trace, each once
    cells = _trace_cells(folder / "runs" / partition)
    assert sorted(cells) == sorted(ALL_CELLS)  # every cell has exactly one trace


def test_from_failure_on_a_killed_run_runs_only_the_cells_without_a_trace(dagster_dev):
    assert "open the failed Dagster run → **Re-execute all (\\*)** ▾ → **From failure**" in documentation()
    instance = dagster_dev.instance()
    killed, calls_before = _killed_run(dagster_dev, "killed_then_retried")
    with ui_page(dagster_dev) as page:
        page.goto(f"{dagster_dev.url}/runs/{killed.run_id}")
        reexecute = page.get_by_role("button", name="Re-execute all (*)")
        reexecute.wait_for()
        reexecute.locator("xpath=following::button[1]").click()  # the ▾ beside it
        page.get_by_role("menuitem", name="From failure").click()

        run = finished_run(instance, f"{EVAL}__run", dagster_dev.log, "killed_then_retried", parent=killed.run_id)
    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert run.tags["dagster/partition"] == "killed_then_retried"
    events = materialized(instance, run.run_id)
    assert set(events) == {"traces", "results", "summary", "drift"}  # `cases` had succeeded: not again
    assert events["summary"].metadata["complete"].value is True
    assert events["traces"].metadata["cells_run"].value == len(HANGING)
    _assert_resumed(dagster_dev, "killed_then_retried", calls_before)


def test_materializing_traces_of_a_killed_run_runs_only_the_cells_without_a_trace(dagster_dev):
    assert ("**Catalog** → `<eval>/` → `traces` → **Materialize…** → **Select a partition or create one** → "
            "the run's id → **Launch 1 run**") in documentation()
    instance = dagster_dev.instance()
    _, calls_before = _killed_run(dagster_dev, "killed_then_traced")
    with ui_page(dagster_dev) as page:
        page.goto(f"{dagster_dev.url}/assets/{EVAL}")  # **Catalog** → `<eval>/` (tests/e2e/test_ui_routes.py walks it)
        page.locator(f'a[href^="/assets/{EVAL}/traces"]:visible').first.click()
        page.get_by_text("Materialize…", exact=True).first.click()
        page.get_by_text("Select a partition or create one", exact=True).first.click()
        page.get_by_text("killed_then_traced", exact=True).first.click()
        page.get_by_role("button", name="Launch 1 run").click()

        run = finished_run(instance, "__ASSET_JOB", dagster_dev.log, "killed_then_traced")
    assert run.status == dg.DagsterRunStatus.SUCCESS
    events = materialized(instance, run.run_id)
    assert set(events) == {"traces"}
    assert events["traces"].metadata["cells_run"].value == len(HANGING)
    _assert_resumed(dagster_dev, "killed_then_traced", calls_before)
