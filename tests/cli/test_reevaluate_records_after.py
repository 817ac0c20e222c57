"""`evalh re-evaluate` returns when its work is on disk and records its Dagster run after
(defs/record_after.py): the run appears, its checks say what the command printed, and a
command on the same run waits for the recorder instead of being refused."""

from __future__ import annotations

import re
import time

import dagster as dg
import pytest

from evalh_pipeline.store.run_dir import RunDirectory
from tests.cli.test_read_only_commands import BROKEN, _make_run
from tests.conftest import REPO, run_evalh

pytestmark = pytest.mark.e2e


@pytest.fixture
def broken_run(tmp_path, env):
    run = _make_run(tmp_path / "evals" / "toy", BROKEN, "r2_broken")
    dg.DagsterInstance.from_config(env["DAGSTER_HOME"]).dispose()  # the user's instance exists already
    return run, {**env, "COLUMNS": "200"}


def _recorded_run(env, dagster_run_id: str, timeout: float = 120) -> dg.DagsterRun:
    deadline = time.monotonic() + timeout
    while True:
        with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
            run = instance.get_run_by_id(dagster_run_id)
            if run is not None and run.is_finished:
                return run
        assert time.monotonic() < deadline, f"Dagster run {dagster_run_id} not recorded in {timeout} s"
        time.sleep(0.25)


def _failed_checks(env, dagster_run_id: str) -> list[str]:
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        records = instance.all_logs(dagster_run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
        return [f"{e.asset_key.to_user_string()}: {e.check_name}"
                for e in (r.dagster_event.event_specific_data for r in records) if not e.passed]


def test_reevaluate_records_its_dagster_run_after_returning_with_the_gates_it_printed(broken_run):
    run, env = broken_run
    proc = run_evalh(["re-evaluate", "--all", str(run)], env, REPO)
    assert proc.returncode == 0, proc.stderr
    printed = sorted(line.removeprefix("gate failed: ") for line in proc.stdout.splitlines()
                     if line.startswith("gate failed: "))
    assert printed == ["toy/summary: no_regressions_vs_baseline_variant"]
    (dagster_run_id,) = re.findall(r"Dagster run ([0-9a-f-]{36}): recorded in the background", proc.stderr)

    recorded = _recorded_run(env, dagster_run_id)
    assert recorded.status == dg.DagsterRunStatus.SUCCESS
    assert recorded.tags["evalh/run_id"] == "r2_broken" and recorded.tags["evalh/rejudge"] == "all"
    assert sorted(_failed_checks(env, dagster_run_id)) == printed
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        summary = instance.get_latest_materialization_event(dg.AssetKey(["toy", "summary"]))
        assert summary.run_id == dagster_run_id
        assert summary.asset_materialization.metadata["pass_rate/candidate"].value == pytest.approx(4 / 7)
    log = RunDirectory(run).path / "dagster-record.log"
    assert f"as Dagster run {dagster_run_id}" in log.read_text()


def test_a_command_on_the_run_waits_for_the_recorder_instead_of_being_refused(broken_run):
    run, env = broken_run
    first = run_evalh(["re-evaluate", "--all", str(run)], env, REPO)
    assert first.returncode == 0, first.stderr
    # At once, while the first command's Dagster run is (most likely) still being recorded.
    second = run_evalh(["re-evaluate", "--all", str(run)], env, REPO)
    assert second.returncode == 0, second.stderr
    assert "being written by another process" not in second.stderr
    ids = [re.search(r"Dagster run ([0-9a-f-]{36})", p.stderr).group(1) for p in (first, second)]
    assert [_recorded_run(env, i).status for i in ids] == [dg.DagsterRunStatus.SUCCESS] * 2
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        # Recorded one after the other: the second run started after the first ended.
        first_record, second_record = (instance.get_run_record_by_id(i) for i in ids)
        assert second_record.start_time >= first_record.end_time


def test_wait_for_dagster_returns_with_the_run_recorded(broken_run):
    run, env = broken_run
    proc = run_evalh(["re-evaluate", "--wait-for-dagster", str(run)], env, REPO)
    assert proc.returncode == 0, proc.stderr
    assert "in the background" not in proc.stderr
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        (record,) = instance.get_run_records()
        assert record.dagster_run.status == dg.DagsterRunStatus.SUCCESS
        assert record.dagster_run.job_name == "toy__judge"


def test_a_recorder_that_failed_is_reported_by_the_next_command_on_the_run(broken_run, tmp_path):
    run, env = broken_run
    broken_home = tmp_path / "broken_home"
    broken_home.mkdir()
    (broken_home / "dagster.yaml").write_text("run_storage: {module: no_such_module, class: Nowhere}\n")
    first = run_evalh(["re-evaluate", str(run)], {**env, "DAGSTER_HOME": str(broken_home)}, REPO)
    assert first.returncode == 0, first.stderr  # the results, summary and gates are done and printed
    assert "gate failed: toy/summary: no_regressions_vs_baseline_variant" in first.stdout

    second = run_evalh(["re-evaluate", str(run)], env, REPO)  # waits for the first recorder to end
    assert second.returncode == 0, second.stderr
    assert "the last re-evaluation of this run was not recorded in Dagster" in second.stderr
    assert "no_such_module" in second.stderr  # the log's last lines say why
    (dagster_run_id,) = re.findall(r"Dagster run ([0-9a-f-]{36}): recorded", second.stderr)
    assert _recorded_run(env, dagster_run_id).status == dg.DagsterRunStatus.SUCCESS
    third = run_evalh(["re-evaluate", str(run)], env, REPO)
    assert "not recorded in Dagster" not in third.stderr


def test_a_blocking_gate_that_fails_stops_the_drift_here_and_in_the_recorded_run(broken_run):
    run, env = broken_run
    eval_yaml = run.parent.parent / "eval.yaml"
    eval_yaml.write_text(eval_yaml.read_text() + "gates: {blocking: true}\n")
    proc = run_evalh(["re-evaluate", "--all", str(run)], env, REPO)
    assert proc.returncode == 0, proc.stderr
    assert "gate failed: toy/summary: no_regressions_vs_baseline_variant" in proc.stdout
    assert not (run / "drift.yaml").exists()  # as in Dagster: the failed blocking check stops the drift
    (dagster_run_id,) = re.findall(r"Dagster run ([0-9a-f-]{36}): recorded", proc.stderr)
    assert _recorded_run(env, dagster_run_id).status == dg.DagsterRunStatus.FAILURE  # the gate blocked it
    assert _failed_checks(env, dagster_run_id) == ["toy/summary: no_regressions_vs_baseline_variant"]
    with dg.DagsterInstance.from_config(env["DAGSTER_HOME"]) as instance:
        assert instance.get_latest_materialization_event(dg.AssetKey(["toy", "drift"])) is None
    assert "as Dagster run" in (run / "dagster-record.log").read_text()
