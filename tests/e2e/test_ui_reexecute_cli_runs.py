"""Dagster's own "Re-execute" buttons on runs the `evalh` CLI made, in a real browser against `dagster dev`.

`evalh run` of the `reexecuted` eval (in the UI's evals folder) executes its Dagster run in its
own process on the UI's instance. Killed (SIGKILL) while the cells of four cases have a trace
and the cells of two hang, its run is marked failed by the code location's sensor; **Re-execute
all** ▾ → **From failure** on it in the UI finishes the eval run. **Re-execute all** on a CLI
run that finished re-executes it. Each re-execution succeeds on the parent's partition, and
no cell that had a trace calls the system again (the agent's calls.log). On a CLI run of an
eval outside the UI's evals folder, the buttons are disabled, saying the code location has no such job;
on a CLI run of an eval file elsewhere named as the served eval, they are enabled (Dagster finds
the job by name) and the re-execution refuses in one line, writing nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import dagster as dg
import pytest

from evalh_pipeline.runner.stages import load_summary
from evalh_pipeline.store.run_dir import RunDirectory
from tests.support.evalh_process import EVALH, run_evalh
from tests.support.evals import STEADY_SYSTEMS, write_eval
from tests.e2e.browser import documentation, ui_page
from tests.e2e.support import HANGING_CASES, finished_run, wait_for

pytestmark = pytest.mark.e2e

EVAL = "reexecuted"
VARIANTS = ("base", "candidate")
HANGING = {(f"case_{i}", v) for i in (HANGING_CASES - 2, HANGING_CASES - 1) for v in VARIANTS}
ALL_CELLS = {(f"case_{i}", v) for i in range(HANGING_CASES) for v in VARIANTS}
# Why the buttons are disabled on a CLI run of an eval the code location does not serve (the docs says so).
NOT_FOUND = '"outside__run" is not available in your definitions.'
# Generous bounds for a loaded two-core machine, never a pace: the sensor looks every 10 s.
TIMEOUT = 300


def _folder(dagster_dev) -> Path:
    return dagster_dev.repo / "evals" / EVAL


def _calls(folder: Path) -> list[tuple[str, str, int]]:
    log = folder / "calls.log"
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()] if log.exists() else []


def _traced(run_dir: Path) -> list[tuple[str, str]]:
    traces = run_dir / "traces.jsonl"
    lines = traces.read_text().splitlines() if traces.exists() else []
    return [(t["case_id"], t["variant_name"]) for t in map(json.loads, lines)]


def _env(dagster_dev) -> dict[str, str]:
    return {**os.environ, "DAGSTER_HOME": str(dagster_dev.home)}


def _cli_runs(instance: dg.DagsterInstance) -> set[str]:
    return {r.run_id for r in instance.get_runs(dg.RunsFilter(job_name=f"{EVAL}__run", tags={"evalh/trigger": "cli"}))
            if r.parent_run_id is None}


def _new_cli_run(instance: dg.DagsterInstance, before: set[str]) -> dg.DagsterRun | None:
    """The CLI's run of the eval not among ``before``, once there is one."""
    new = _cli_runs(instance) - before
    return instance.get_run_by_id(new.pop()) if new else None


def _assert_complete(run_dir: Path) -> None:
    assert sorted(_traced(run_dir)) == sorted(ALL_CELLS)  # every cell has exactly one trace
    summary = load_summary(RunDirectory(run_dir))
    assert summary.completeness is not None and summary.completeness.complete


def _click_reexecute(page, dagster_dev, run_id: str, strategy: str | None) -> None:
    """On the run's page: **Re-execute all**, or its ▾ → ``strategy``."""
    page.goto(f"{dagster_dev.url}/runs/{run_id}")
    button = page.get_by_role("button", name="Re-execute all", exact=False).first
    button.wait_for()
    if strategy is None:
        button.click()
    else:
        button.locator("xpath=following::button[1]").click()  # the ▾ beside it
        page.get_by_role("menuitem", name=strategy).click()


def test_from_failure_on_a_killed_cli_run_calls_only_the_cells_without_a_trace(dagster_dev, tmp_path):
    assert "Dagster's own buttons work on" in documentation()
    instance = dagster_dev.instance()
    folder = _folder(dagster_dev)
    (folder / "hold").write_text("")
    before = _cli_runs(instance)
    proc = subprocess.Popen([*EVALH, "run", str(folder / "eval.yaml")], cwd=tmp_path,
                            env=_env(dagster_dev), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        killed = wait_for(lambda: _new_cli_run(instance, before), TIMEOUT, "evalh's Dagster run", dagster_dev.log)
        partition = killed.tags["dagster/partition"]
        run_dir = folder / "runs" / partition
        wait_for(lambda: proc.poll() is not None or (set(_traced(run_dir)) == ALL_CELLS - HANGING
                                                      and HANGING <= {c[:2] for c in _calls(folder)}),
                 TIMEOUT, "evalh to hang on the last two cases", dagster_dev.log)
        assert proc.poll() is None, f"evalh exited with {proc.returncode} while its cases hang"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        (folder / "hold").unlink()
    failed = wait_for(lambda: (r := instance.get_run_by_id(killed.run_id)) and r.is_finished and r, TIMEOUT,
                      "the sensor to mark the killed CLI run failed", dagster_dev.log)
    assert failed.status == dg.DagsterRunStatus.FAILURE
    calls_before = len(_calls(folder))

    with ui_page(dagster_dev) as page:
        _click_reexecute(page, dagster_dev, killed.run_id, "From failure")
        run = finished_run(instance, f"{EVAL}__run", dagster_dev.log, partition, TIMEOUT, parent=killed.run_id)

    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert run.tags["dagster/partition"] == partition
    assert sorted(c[:2] for c in _calls(folder)[calls_before:]) == sorted(HANGING)  # each once, no other
    _assert_complete(run_dir)


def test_reexecute_all_on_a_finished_cli_run_calls_no_cell_again(dagster_dev, tmp_path):
    instance = dagster_dev.instance()
    folder = _folder(dagster_dev)
    before = _cli_runs(instance)
    done = run_evalh(["run", str(folder / "eval.yaml")], _env(dagster_dev), tmp_path, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    parent = _new_cli_run(instance, before)
    assert parent is not None and parent.status == dg.DagsterRunStatus.SUCCESS
    partition = parent.tags["dagster/partition"]
    calls_before = len(_calls(folder))

    with ui_page(dagster_dev) as page:
        _click_reexecute(page, dagster_dev, parent.run_id, None)
        run = finished_run(instance, f"{EVAL}__run", dagster_dev.log, partition, TIMEOUT, parent=parent.run_id)

    assert run.status == dg.DagsterRunStatus.SUCCESS
    assert run.tags["dagster/partition"] == partition
    assert _calls(folder)[calls_before:] == []  # every cell had a trace
    _assert_complete(folder / "runs" / partition)


def test_the_buttons_on_a_cli_run_of_an_eval_the_ui_does_not_serve_are_disabled_saying_why(dagster_dev, tmp_path):
    instance = dagster_dev.instance()
    outside = write_eval(tmp_path / "elsewhere" / "outside", cases=1, systems=STEADY_SYSTEMS)
    before = {r.run_id for r in instance.get_runs(dg.RunsFilter(job_name="outside__run"))}
    done = run_evalh(["run", str(outside)], _env(dagster_dev), tmp_path, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert "is outside the UI's evals folder" in done.stderr
    (parent,) = [r for r in instance.get_runs(dg.RunsFilter(job_name="outside__run")) if r.run_id not in before]

    with ui_page(dagster_dev) as page:
        page.goto(f"{dagster_dev.url}/runs/{parent.run_id}")
        button = page.get_by_role("button", name="Re-execute all", exact=False).first
        button.wait_for()
        assert button.is_disabled()
        button.hover(force=True)  # its tooltip says why
        page.get_by_text(NOT_FOUND).first.wait_for()
        assert "Load definitions for evalh_pipeline and try again." in page.inner_text("body")
    assert [r.run_id for r in instance.get_runs(dg.RunsFilter(job_name="outside__run"))] == [parent.run_id]


def test_reexecuting_a_cli_run_of_a_same_named_eval_elsewhere_refuses_and_writes_nothing(dagster_dev, tmp_path):
    instance = dagster_dev.instance()
    twin = write_eval(tmp_path / "elsewhere" / EVAL, cases=1, systems=STEADY_SYSTEMS)  # eval.name: reexecuted
    before = _cli_runs(instance)
    done = run_evalh(["run", str(twin)], _env(dagster_dev), tmp_path, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    parent = _new_cli_run(instance, before)
    assert parent is not None and parent.status == dg.DagsterRunStatus.SUCCESS
    partition = parent.tags["dagster/partition"]
    run_dir = (twin.parent / "runs" / partition).resolve()
    traces = (run_dir / "traces.jsonl").read_text()

    with ui_page(dagster_dev) as page:
        _click_reexecute(page, dagster_dev, parent.run_id, None)  # enabled: the served eval has the job
        run = finished_run(instance, f"{EVAL}__run", dagster_dev.log, partition, TIMEOUT, parent=parent.run_id)

    assert run.status == dg.DagsterRunStatus.FAILURE
    (failure,) = [e.dagster_event.event_specific_data.error.message.strip()
                  for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE)]
    assert f"this run belongs to {twin.resolve()} (run folder {run_dir}), not to " in failure
    assert failure.endswith(f"finish the eval run with: evalh run {twin.resolve()} --resume {run_dir}")
    assert not (_folder(dagster_dev) / "runs" / partition).exists()  # the served eval wrote nothing
    assert (run_dir / "traces.jsonl").read_text() == traces
