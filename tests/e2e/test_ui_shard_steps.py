"""The shards of a run's traces stage as Dagster shows them: one step per shard in the run's
page, each succeeded, between the plan and the collect step (issue 34: shards are steps of the
one Dagster run of the eval run's partition, not runs of their own)."""

from __future__ import annotations

import json
import os

import pytest

from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.store.stage_runs import recorded_stage_runs
from tests.e2e.browser import ui_page
from tests.support.evalh_process import run_evalh

pytestmark = pytest.mark.e2e

EVAL = "sharded"
SHARDS = ("shard_1_of_3", "shard_2_of_3", "shard_3_of_3")


def test_the_run_page_shows_a_succeeded_step_per_shard(dagster_dev):
    eval_yaml = dagster_dev.repo / "evals" / EVAL / "eval.yaml"
    env = {**os.environ, "DAGSTER_HOME": str(dagster_dev.home)}
    made = run_evalh(["run", str(eval_yaml)], env, dagster_dev.repo, timeout=300)
    assert made.returncode == 0, made.stderr
    run_dir = sorted((eval_yaml.parent / "runs").glob("2*"), key=lambda p: p.name)[-1]
    traces = [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]
    assert sorted(t["extra"]["executor"]["shard"] for t in traces) == sorted(
        [label for label in ("1-of-3", "2-of-3", "3-of-3") for _ in range(4)])  # 2 cases x 2 variants each
    dagster_run = recorded_stage_runs(RunDirectory(run_dir)).stages["traces"].dagster_run_id

    with ui_page(dagster_dev) as page:
        page.goto(f"{dagster_dev.url}/runs/{dagster_run}")
        # The Gantt chart cuts long step names short ("sharde…") and the log shows the latest
        # events: the log's filter box keeps the shard steps' own events, with their whole keys.
        box = page.get_by_placeholder("Filter…").first
        box.click()
        page.keyboard.type(f"{EVAL}__t")
        page.keyboard.press("Enter")
        for step in (f"{EVAL}__traces.{EVAL}__traces_shard[{key}]" for key in SHARDS):
            page.get_by_text(f'Finished execution of step "{step}"').first.wait_for()
