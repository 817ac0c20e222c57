"""The summary's Checks list after a run that failed before writing anything, in chromium against `dagster dev`.

Dagster 1.13 lists a partitioned check's status as the aggregate over its partitions (any
partition failed or execution-failed → "Failed"; ui-core's asset-checks/util.tsx), not the
latest run's verdict. A UI run whose first step fails (here: a dataset error) leaves its
partition with every planned check "execution failed", so every check of the eval reads
"Failed" though the run before passed them. Removing that partition, which has no run folder,
with `evalh delete-run <id> --eval <eval>` gives the list (and the Lineage tab's "N / M Passed")
back its real statuses.
"""

from __future__ import annotations

import os
import re

import dagster as dg
import pytest

from tests.support.evalh_process import run_evalh
from tests.e2e.browser import add_and_launch_partition, ui_page
from tests.e2e.support import finished_run

pytestmark = pytest.mark.e2e

EVAL = "checked"
BROKEN = "broken-1"
TIMEOUT = 300


def _env(dagster_dev) -> dict[str, str]:
    return {**os.environ, "DAGSTER_HOME": str(dagster_dev.home)}


def _launch_new_partition(page, name: str) -> None:
    """**Jobs** → ``<eval>__run`` → **Materialize all**, then add ``name`` and launch it."""
    page.get_by_text("Jobs", exact=True).first.click()
    page.get_by_text(f"{EVAL}__run", exact=True).first.click()
    page.get_by_role("button", name="Materialize all").click()
    add_and_launch_partition(page, name)


STATUS = r"(Succeeded|Failed|Not evaluated|In progress|Skipped)"


def _check_status(page, url: str, check: str) -> str:
    """The status the summary's Checks list shows for ``check`` (a fresh load of the page).

    The list is not a table: each entry reads its name (twice: shortened and in full) and then
    its status, above the selected check's details."""
    page.goto(f"{url}/assets/{EVAL}/summary?view=checks")
    page.get_by_text(re.compile(r"^Checks \(\d+\)$")).first.wait_for()
    page.get_by_text(re.compile(f"^{STATUS}$")).first.wait_for()
    listed = page.inner_text("body").split("Checks (", 1)[1]
    found = re.search(rf"^{re.escape(check)}\n(?:{re.escape(check)}\n)?{STATUS}$", listed, re.MULTILINE)
    assert found, listed[:2000]
    return found[1]


def _lineage_checks(page, url: str) -> str:
    """The summary node's check count on the asset's Lineage tab ("N / M Passed" or the like).

    Upstream only: of the nodes the tab draws, summary is then the one with checks (the
    downstream `drift` node has checks of its own, and either may be drawn first)."""
    page.goto(f"{url}/assets/{EVAL}/summary?view=lineage")
    page.get_by_text("Upstream", exact=True).click()
    page.get_by_text("drift", exact=True).wait_for(state="detached")  # the graph redrawn without it
    count = page.get_by_text(re.compile(r"\d+ / \d+")).first
    count.wait_for()
    return " ".join(count.inner_text().split())


def test_a_failed_partition_reads_failed_in_the_checks_list_until_delete_run_removes_it(dagster_dev, tmp_path):
    folder = dagster_dev.repo / "evals" / EVAL
    done = run_evalh(["run", str(folder / "eval.yaml")], _env(dagster_dev), tmp_path, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    cases = folder / "cases.jsonl"
    good = cases.read_text()
    with ui_page(dagster_dev) as page:
        assert _check_status(page, dagster_dev.url, "complete") == "Succeeded"
        # Every check of the summary (as many as the definitions declare) passed.
        checks = int(_lineage_checks(page, dagster_dev.url).split(" / ")[1].split()[0])
        assert checks >= 5 and _lineage_checks(page, dagster_dev.url) == f"{checks} / {checks} Passed"
        cases.write_text("{not json\n")  # the UI's run fails at its first step, writing nothing
        try:
            _launch_new_partition(page, BROKEN)
            run = finished_run(dagster_dev.instance(), f"{EVAL}__run", dagster_dev.log, BROKEN)
        finally:
            cases.write_text(good)
        assert run.status == dg.DagsterRunStatus.FAILURE
        assert not (folder / "runs" / BROKEN).exists()
        # Dagster's aggregate over partitions: the failed partition's unexecuted checks.
        assert _check_status(page, dagster_dev.url, "complete") == "Failed"
        assert _lineage_checks(page, dagster_dev.url) == f"0 / {checks} Passed"  # as the issue saw it

        removed = run_evalh(["delete-run", BROKEN, "--eval", EVAL, "--yes"], _env(dagster_dev), tmp_path)
        assert removed.returncode == 0, removed.stderr

        assert _check_status(page, dagster_dev.url, "complete") == "Succeeded"
        assert _lineage_checks(page, dagster_dev.url) == f"{checks} / {checks} Passed"
