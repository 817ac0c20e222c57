"""A run name the UI or evalh refuses ends with a one-line reason a user can see, in a real browser against `dagster dev`.

Dagster's "Add a partition" dialog refuses some names itself (its Save stays disabled, and a
warning says which substrings are not allowed); a name it accepts but evalh refuses (`..`
would name the runs folder's parent) fails the run's first step with evalh's one line, which is
what the run's page shows, before anything is written.
"""

from __future__ import annotations

import dagster as dg
import pytest

from evalh_pipeline.defs.evals.names import RUN_ID_RULE
from tests.e2e.browser import documentation, add_and_launch_partition, type_into, ui_page
from tests.e2e.support import finished_run

pytestmark = pytest.mark.e2e

EVAL = "quick"


def _docs() -> str:
    return " ".join(documentation().split())


def _launch_dialog(page):
    page.get_by_text("Jobs", exact=True).first.click()
    page.get_by_text(f"{EVAL}__run", exact=True).first.click()
    page.get_by_role("button", name="Materialize all").click()


def test_the_add_partition_dialog_refuses_a_name_with_a_space_and_says_which_substrings(dagster_dev):
    assert "a warning icon in the box whose tooltip reads \"The following substrings are not allowed" in _docs()
    with ui_page(dagster_dev) as page:
        _launch_dialog(page)
        page.get_by_text("Add a partition", exact=True).first.click()
        type_into(page.get_by_placeholder("name", exact=True), "my run")
        save = page.get_by_role("button", name="Save")
        assert save.is_disabled()
        page.get_by_role("dialog").get_by_role("img", name="warning").hover()
        tooltip = page.get_by_text("The following substrings are not allowed:").first
        tooltip.wait_for()
        assert '" "' in tooltip.inner_text()  # the space, among the substrings it lists
    assert "my run" not in dagster_dev.instance().get_dynamic_partitions(f"{EVAL}__runs")


def test_a_name_evalh_refuses_fails_the_first_step_with_one_line_and_writes_nothing(dagster_dev):
    reason = f"dagster._core.definitions.events.Failure: '..' cannot be a run id (a partition key and a folder name): " \
             f"use {RUN_ID_RULE}"
    assert reason.replace("'..'", "'<name>'") in _docs()
    assert 'Execution of run for "<eval>__run" failed. Steps failed: [\'<eval>__cases\'].' in _docs()
    instance = dagster_dev.instance()
    runs_folder = dagster_dev.repo / "evals" / EVAL / "runs"
    before = sorted(p.name for p in runs_folder.iterdir()) if runs_folder.exists() else []
    with ui_page(dagster_dev) as page:
        _launch_dialog(page)
        add_and_launch_partition(page, "..")

        run = finished_run(instance, f"{EVAL}__run", dagster_dev.log, "..")
        assert run.status == dg.DagsterRunStatus.FAILURE
        page.goto(f"{dagster_dev.url}/runs/{run.run_id}")
        page.get_by_text(f'Execution of run for "{EVAL}__run" failed. Steps failed: [\'{EVAL}__cases\'].').first.wait_for()
        page.get_by_text(reason).first.wait_for()
        text = page.inner_text("body")
    # The reason is the line under the failure, before the stack trace.
    assert text.index(reason) < text.index("Stack Trace")
    after = sorted(p.name for p in runs_folder.iterdir()) if runs_folder.exists() else []
    assert after == before  # nothing written
    failures = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
    assert [f.step_key for f in failures] == [f"{EVAL}__cases"]
    assert failures[0].dagster_event.step_failure_data.user_failure_data.description == reason.split(": ", 1)[1]
