"""Automation under a real dagster-daemon: a fixture commit and a drift-cron tick each add a partition and make one complete run of it.

Against the session's `dagster dev` (webserver + daemon on a temporary instance) and a real
git repository: a commit that touches no input of the eval starts nothing; a commit that
changes the eval (a new variant) and its dataset starts exactly one run whose summary
covers every variant, with drift and checks; a tick of `* * * * *` starts a complete run.
"""

from __future__ import annotations

import time
from pathlib import Path

import dagster as dg
import pytest
import yaml

from tests.support.evalh_process import run_evalh
from tests.e2e.support import YEARLY_CRON, commit, sensor_ticks_after, wait_for

pytestmark = pytest.mark.e2e

FIXTURE_SENSOR = "fix__fixtures_changed"
# The target is 60 s from commit to summary; allow for a loaded two-core CI machine.
LATENCY_LIMIT = 150


def _sensor_state(instance, name):
    from dagster._core.definitions.run_request import InstigatorType  # not exported at the top level

    for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
        if state.name == name:
            return state
    return None


def _runs(instance, job, trigger):
    return [r for r in instance.get_runs(dg.RunsFilter(job_name=job)) if r.tags.get("evalh/trigger") == trigger]


def _assert_complete_run(instance, run, eval_name, variants):
    """The Dagster run materialized every stage of the eval for its partition (a partition the
    sensor added), its summary covers every variant, checks ran on that partition."""
    assert run.status == dg.DagsterRunStatus.SUCCESS, run.status
    partition = run.tags["dagster/partition"]
    assert partition in instance.get_dynamic_partitions(f"{eval_name}__runs")
    events = {e.dagster_event.event_specific_data.materialization.asset_key.path[-1]:
              e.dagster_event.event_specific_data.materialization
              for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)}
    assert set(events) == {"cases", "traces", "results", "summary", "drift"}
    assert {m.partition for m in events.values()} == {partition}
    summary = events["summary"].metadata
    assert summary["complete"].value is True
    assert {k.split("/", 1)[1] for k in summary if k.startswith("pass_rate/")} == set(variants)
    evaluations = [e.dagster_event.event_specific_data
                   for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)]
    assert {e.partition for e in evaluations} == {partition}
    checks = {e.check_name: e.passed for e in evaluations}
    assert checks["complete"] is True
    assert {"no_regressions_vs_baseline_variant", "pass_rate_floor", "errored_cells_under_threshold",
            "no_regressions_vs_promoted_baseline"} <= set(checks)
    run_dir = Path(summary["run_dir"].value)
    assert run_dir.name == partition
    written = yaml.safe_load((run_dir / "summary.yaml").read_text())
    assert sorted(v["name"] for v in written["variants"]) == sorted(variants)
    assert written["completeness"]["complete"] is True
    assert (run_dir / "drift.yaml").exists() and (run_dir / "drift.md").exists()


def test_a_fixture_commit_makes_one_complete_run_and_an_unrelated_commit_none(dagster_dev):
    instance = dagster_dev.instance()
    repo = dagster_dev.repo
    # Running by default (automation.on_fixture_change): its first evaluation records the fingerprint.
    wait_for(lambda: (s := _sensor_state(instance, FIXTURE_SENSOR)) and s.instigator_data
          and s.instigator_data.cursor, 180, "the fixture sensor's first evaluation", dagster_dev.log)

    (repo / "README.md").write_text("an unrelated change\n")
    commit(repo, "unrelated")
    # An evaluation that starts once the commit is in has seen it.
    since = time.time()
    wait_for(lambda: len(sensor_ticks_after(instance, FIXTURE_SENSOR, since)) >= 1, 120,
          "a fixture-sensor tick after the unrelated commit", dagster_dev.log)
    assert _runs(instance, "fix__run", "fixtures") == []
    assert instance.get_dynamic_partitions("fix__runs") == []  # no partition either

    # Change the eval's inputs: a third variant in eval.yaml (no reload) and a new case.
    eval_yaml = repo / "evals" / "fix" / "eval.yaml"
    eval_yaml.write_text(eval_yaml.read_text().replace(
        "systems:\n", "systems:\n  - name: third\n    adapter: python_function\n    target: stub_agent:run\n", 1))
    with (repo / "evals" / "fix" / "cases.jsonl").open("a") as f:
        f.write('{"id": "case_new", "input": {"answer": "Paris"}, '
                '"expected": {"answer_should_include": ["Paris"], "must_call_tools": ["lookup"]}}\n')
    committed = time.time()
    head = commit(repo, "fixtures v2: a new case and a third variant")

    def finished():
        runs = _runs(instance, "fix__run", "fixtures")
        return runs if runs and runs[0].is_finished else None

    (run,) = wait_for(finished, LATENCY_LIMIT + 60, "the fixture run to finish", dagster_dev.log)
    record = instance.get_run_record_by_id(run.run_id)
    latency = record.end_time - committed
    print(f"fixture commit -> completed summary: {latency:.1f} s")
    assert latency <= LATENCY_LIMIT
    assert run.tags["evalh/fixture_commit"] == head
    _assert_complete_run(instance, run, "fix", ["base", "candidate", "third"])

    # Nothing changed since: still exactly one fixture run after further ticks.
    since = time.time()
    wait_for(lambda: len(sensor_ticks_after(instance, FIXTURE_SENSOR, since)) >= 1, 120, "another tick", dagster_dev.log)
    assert len(_runs(instance, "fix__run", "fixtures")) == 1


def test_a_fixture_commit_reuses_the_unchanged_traces_of_the_last_complete_run(dagster_dev):
    """``automation.reuse_unchanged_traces``: after a run by hand, a commit changing one case makes
    a run that copies every other cell's trace and calls the system for that case only."""
    import os

    instance = dagster_dev.instance()
    repo = dagster_dev.repo
    sensor = "reusing__fixtures_changed"
    wait_for(lambda: (s := _sensor_state(instance, sensor)) and s.instigator_data and s.instigator_data.cursor,
          180, "the reusing eval's first sensor evaluation", dagster_dev.log)
    eval_yaml = repo / "evals" / "reusing" / "eval.yaml"
    by_hand = run_evalh(["run", str(eval_yaml)], {**os.environ, "DAGSTER_HOME": str(dagster_dev.home)}, repo,
                        timeout=240)
    assert by_hand.returncode == 0, by_hand.stderr
    previous = next(r for r in instance.get_runs(dg.RunsFilter(job_name="reusing__run"))
                    if r.tags.get("evalh/trigger") == "cli").tags["dagster/partition"]

    cases = repo / "evals" / "reusing" / "cases.jsonl"
    lines = cases.read_text().splitlines()
    lines[1] = lines[1].replace("answer 1 Paris", "answer 1 changed Paris")
    cases.write_text("\n".join(lines) + "\n")
    commit(repo, "reusing: case_1 changed")

    def finished():
        runs = _runs(instance, "reusing__run", "fixtures")
        return runs if runs and runs[0].is_finished else None

    (run,) = wait_for(finished, LATENCY_LIMIT + 60, "the reusing fixture run to finish", dagster_dev.log)
    assert run.tags["evalh/reuse_from"] == previous
    _assert_complete_run(instance, run, "reusing", ["base", "candidate"])
    traces = next(e.dagster_event.event_specific_data.materialization.metadata
                  for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
                  if e.dagster_event.event_specific_data.materialization.asset_key.path[-1] == "traces")
    assert traces["cells_reused"].value == 6 and traces["cells_run"].value == 2
    assert traces["reused_from_run_id"].value == previous
    written = yaml.safe_load((Path(traces["run_dir"].value) / "summary.yaml").read_text())
    assert written["reused_traces"] == 6 and written["reused_from"] == [previous]


def test_a_drift_cron_tick_makes_a_complete_run(dagster_dev):
    instance = dagster_dev.instance()
    eval_yaml = dagster_dev.repo / "evals" / "drifting" / "eval.yaml"
    yearly = eval_yaml.read_text()
    assert YEARLY_CRON in yearly  # as the suite wrote it: no tick of it starts a run beside the other tests

    def finished():
        runs = [r for r in _runs(instance, "drifting__run", "schedule") if r.is_finished]
        return runs[-1] if runs else None

    # The sensor reads the cron from the eval file at every evaluation: the latest tick of
    # `* * * * *` is newer than the yearly one it recorded, so its next evaluation starts a run.
    eval_yaml.write_text(yearly.replace(YEARLY_CRON, "* * * * *"))
    try:
        run = wait_for(finished, 240, "a run of the drift cron to finish", dagster_dev.log)
    finally:
        eval_yaml.write_text(yearly)
    assert run.tags["evalh/drift_tick"].endswith("+00:00")
    _assert_complete_run(instance, run, "drifting", ["base", "candidate"])
