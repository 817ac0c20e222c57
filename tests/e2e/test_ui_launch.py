"""The docs' UI routes, driven in a real browser (Playwright + Debian's chromium) against `dagster dev`.

Every eval run is a partition of `<eval>__runs`: a new run is a new partition (added in the
launch dialog), re-judging and promoting pick an existing one. Each route is the docs',
word for word, so the two cannot drift apart.
"""

from __future__ import annotations

import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dagster as dg
import pytest

from tests.e2e.browser import documentation, launch_new_partition, search_jobs, type_into, ui_page
from tests.e2e.support import finished_run, materialized

pytestmark = pytest.mark.e2e

def _cli_run(dagster_dev, eval_name):
    from tests.support.evalh_process import run_evalh

    eval_yaml = dagster_dev.repo / "evals" / eval_name / "eval.yaml"
    made = run_evalh(["run", str(eval_yaml)], {**os.environ, "DAGSTER_HOME": str(dagster_dev.home)},
                     dagster_dev.repo, timeout=300)
    assert made.returncode == 0, made.stderr
    (run_dir,) = (dagster_dev.repo / "evals" / eval_name / "runs").glob("2*")
    return eval_yaml, run_dir


def test_a_new_run_from_the_ui_is_a_new_partition_in_five_actions(dagster_dev):
    # The route as the docs states it, so the two cannot drift apart.
    assert ("**Jobs** → **`<eval>__run`** → **Materialize all** → **Add a partition** → type a name → "
            "**Save** → **Launch 1 run**") in documentation()
    instance = dagster_dev.instance()
    with ui_page(dagster_dev) as page:
        search_jobs(page, "quick")  # the list shows only the jobs in view: four per eval
        page.get_by_text("quick__run", exact=True).first.click()
        page.get_by_role("button", name="Materialize all").click()              # 1
        page.get_by_text("Add a partition", exact=True).first.click()           # 2
        type_into(page.get_by_placeholder("name", exact=True), "first_from_ui")  # 3
        page.get_by_role("button", name="Save").click()                         # 4
        launch_new_partition(page, "first_from_ui")                             # 5

        run = finished_run(instance, "quick__run", dagster_dev.log, "first_from_ui")
        assert run.status == dg.DagsterRunStatus.SUCCESS
        assert run.tags.get("dagster/from_ui") == "true"
        events = materialized(instance, run.run_id)
        assert set(events) == {"cases", "traces", "results", "summary", "drift"}
        assert {m.partition for m in events.values()} == {"first_from_ui"}
        summary = events["summary"].metadata
        assert summary["complete"].value is True
        assert Path(summary["run_dir"].value).name == "first_from_ui"
        rates = {k.split("/", 1)[1]: v.value for k, v in summary.items() if k.startswith("pass_rate/")}
        assert set(rates) == {"base", "candidate"}

        # The summary asset's page shows each variant's pass rate.
        page.goto(f"{dagster_dev.url}/assets/quick/summary")
        for variant, rate in rates.items():
            row = page.get_by_text(f"pass_rate/{variant}", exact=True).first
            row.wait_for()
            body = page.inner_text("body")
            assert re.search(rf"pass_rate/{variant}\s+.*?\s+{re.escape(_shown(rate))}", body, re.S), body[:3000]
        assert "complete: 8/8 cells have a trace" in page.inner_text("body")
        # The Partitions tab lists the run.
        page.goto(f"{dagster_dev.url}/assets/quick/summary?view=partitions")
        page.get_by_text("first_from_ui").first.wait_for()


def test_rejudging_and_promoting_a_run_from_the_ui_pick_its_partition(dagster_dev):
    text = documentation()
    assert ("**Jobs** → **`<eval>__judge`** → **Materialize all** → **Select a partition or create one** → "
            "the run's id → **Launch 1 run**") in text
    assert ("**Jobs** → **`<eval>__promote`** → **Launchpad** → **Partition**: the run's id → "
            "**Launch Run**") in text
    instance = dagster_dev.instance()
    eval_yaml, run_dir = _cli_run(dagster_dev, "rejudged")
    run_id = run_dir.name
    traces_before = (run_dir / "traces.jsonl").read_bytes()
    with ui_page(dagster_dev) as page:
        search_jobs(page, "rejudged")  # the list shows only the jobs in view: four per eval
        page.get_by_text("rejudged__judge", exact=True).first.click()
        page.get_by_role("button", name="Materialize all").click()
        page.get_by_text("Select a partition or create one", exact=True).first.click()
        page.get_by_text(run_id, exact=True).first.click()
        page.get_by_role("button", name="Launch 1 run").click()

        judged = finished_run(instance, "rejudged__judge", dagster_dev.log, run_id)
        assert judged.status == dg.DagsterRunStatus.SUCCESS
        events = materialized(instance, judged.run_id)
        assert set(events) == {"results", "summary", "drift"}  # never traces: the system is not called
        assert {m.partition for m in events.values()} == {run_id}
        assert (run_dir / "traces.jsonl").read_bytes() == traces_before  # write-once: no cell ran

        page.goto(dagster_dev.url + "/")
        search_jobs(page, "rejudged")
        page.get_by_text("rejudged__promote", exact=True).first.click()
        page.get_by_text("Launchpad", exact=True).first.click()
        # The Partition box lists the partitions once the launchpad has loaded them (its sort
        # button shows then); clicked before, it is a bare box that never lists them (seen under load).
        page.get_by_role("img", name="sort_by_alpha").first.wait_for()
        page.get_by_placeholder("Partition").first.click()
        page.get_by_text(run_id, exact=True).first.click()
        page.get_by_role("button", name="Launch Run").click()

        promoted = finished_run(instance, "rejudged__promote", dagster_dev.log, run_id)
        assert promoted.status == dg.DagsterRunStatus.SUCCESS
        baseline = instance.get_latest_materialization_event(dg.AssetKey(["rejudged", "baseline"]))
        assert baseline.asset_materialization.metadata["partition"].value == run_id
        pointer = json.loads((run_dir.parent / "baselines" / "rejudged" / "current.json").read_text())
        assert run_id in json.dumps(pointer)


def test_the_summary_partition_shows_unsynced_once_results_were_rejudged_after_an_evaluator_changed(dagster_dev):
    """Data versions: results carry the version of results.jsonl, so the run's summary partition,
    which read the old results, shows "Unsynced" in the partition view once they were re-judged
    with a changed evaluator."""
    from evalh_pipeline.defs.definitions import build_definitions
    from evalh_pipeline.runner.loading import load_eval

    instance = dagster_dev.instance()
    eval_yaml, run_dir = _cli_run(dagster_dev, "versioned")
    with ui_page(dagster_dev) as page:
        page.goto(f"{dagster_dev.url}/assets/versioned/summary")
        page.get_by_text("pass_rate/base", exact=True).first.wait_for()
        assert "Unsynced" not in page.inner_text("body")

        # An evaluator changes; only `results` of the run is rematerialized (as "Materialize selected" would).
        eval_yaml.write_text(eval_yaml.read_text().replace(
            "type: contains_text", "type: contains_text\n    config: {case_sensitive: true}"))
        defs, _ = build_definitions([load_eval(eval_yaml)])
        job = defs.resolve_job_def("versioned__judge")
        # In a thread of its own: Playwright's sync API keeps an event loop running in this one.
        with ThreadPoolExecutor(1) as pool:
            pool.submit(job.execute_in_process, instance=instance, partition_key=run_dir.name,
                        asset_selection=[dg.AssetKey(["versioned", "results"])]).result()

        # Per-partition staleness is drawn in the asset's partition view (not on the global
        # graph: dagster-io/dagster#22553): the run's summary partition is "Unsynced".
        page.goto(f"{dagster_dev.url}/assets/versioned/summary?view=partitions&partition={run_dir.name}")
        page.get_by_text("Unsynced").first.wait_for()


def _shown(rate: float) -> str:
    """How the UI prints a float metadata value: ``1`` for 1.0, else Python's repr."""
    return "1" if rate == 1.0 else repr(rate)
