"""Every UI route the docs gives is walked by an e2e test, so a route that stops existing fails CI.

A route is a chain of `→` steps starting from something a user clicks first (a bold item of
Dagster's navigation, a run or asset page, the viewer). ROUTES names the test that walks each
one (each of those tests also asserts the docs' words); a route written into the docs
without a test here fails this file, and so does a route whose words changed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.browser import documentation

HERE = Path(__file__).resolve().parent

# The docs' route (whitespace collapsed) → the e2e tests (file::function) that walk it.
ROUTES = {
    "**Catalog** → the folder button beside the search box → `quickstart/` → `summary` → **Partitions**":
        ["test_ui_routes.py::test_each_eval_is_one_entry_of_the_catalog_by_key_prefix"],
    "**Catalog** → the folder button beside the search box → `<eval>/` → its six assets":
        ["test_ui_routes.py::test_each_eval_is_one_entry_of_the_catalog_by_key_prefix"],
    "**Jobs** → **Search and filter jobs** → the eval's name, Enter → `<eval>__run`, `<eval>__judge`, `<eval>__promote`":
        ["test_ui_routes.py::test_an_evals_jobs_are_listed_by_searching_its_name"],
    "**Catalog** → `<eval>/` → `summary` → **Partitions** → the run's id":
        ["test_ui_routes.py::test_a_runs_pass_rates_are_on_its_partition_and_the_pickers_filter_its_id_by_time"],
    "**Catalog** → `<eval>/` → `summary` → the latest materialization's `viewer` link → a cell of the matrix":
        ["test_ui_routes.py::test_from_the_summary_to_a_trace_in_two_clicks_and_back_to_the_dagster_run_in_one"],
    "a run's page in `evalh view` → **Dagster:** `run <id>`":
        ["test_ui_routes.py::test_from_the_summary_to_a_trace_in_two_clicks_and_back_to_the_dagster_run_in_one"],
    "the asset's page (e.g. `<eval>/cases`) → the **▾** beside **Materialize…** → **Delete partitions** → "
    "**Select a partition** → the run's id → **Delete 1 partition**":
        ["test_ui_routes.py::test_a_partition_without_a_run_folder_is_deleted_from_the_assets_menu"],
    "**Jobs** → **`<eval>__run`** → **Materialize all** → **Add a partition** → type a name → **Save** → "
    "**Launch 1 run**":
        ["test_ui_launch.py::test_a_new_run_from_the_ui_is_a_new_partition_in_five_actions"],
    "**Jobs** → **`<eval>__judge`** → **Materialize all** → **Select a partition or create one** → the run's id → "
    "**Launch 1 run**":
        ["test_ui_launch.py::test_rejudging_and_promoting_a_run_from_the_ui_pick_its_partition"],
    "**Jobs** → **`<eval>__promote`** → **Launchpad** → **Partition**: the run's id → **Launch Run**":
        ["test_ui_launch.py::test_rejudging_and_promoting_a_run_from_the_ui_pick_its_partition"],
    "open the failed Dagster run → **Re-execute all (\\*)** ▾ → **From failure**":
        ["test_ui_resume.py::test_from_failure_on_a_killed_run_runs_only_the_cells_without_a_trace"],
    "**Catalog** → `<eval>/` → `traces` → **Materialize…** → **Select a partition or create one** → the run's id → "
    "**Launch 1 run**":
        ["test_ui_resume.py::test_materializing_traces_of_a_killed_run_runs_only_the_cells_without_a_trace"],
    # The two backfill launches are sent as the dialog sends them (its GraphQL mutation), not clicked.
    "**Jobs** → **`<eval>__run`** → **Materialize all** → **All** (or **Missing**) → **Launch backfill**":
        ["test_backfill_queue.py::test_a_backfill_over_40_runs_keeps_at_most_4_in_flight_and_the_rest_queued"],
    "select the eval's assets → **Materialize selected** → the partitions → **Launch backfill**":
        ["test_backfill_queue.py::test_a_backfill_over_40_runs_keeps_at_most_4_in_flight_and_the_rest_queued"],
}

# Where a route starts: Dagster's navigation, a page a user is on, the viewer.
_START = re.compile(r"\*\*(?:Overview|Runs|Catalog|Assets|Jobs|Automation|Lineage|Deployment)\*\* →"
                    r"|(?:page|run|assets|`evalh view`|\)) →")


def _docs() -> str:
    return " ".join(documentation().split())


@pytest.mark.parametrize("route", list(ROUTES))
def test_each_route_is_in_the_readme_and_its_test_exists(route):
    assert route in _docs(), f"the docs no longer gives this route: {route}"
    for test in ROUTES[route]:
        file, function = test.split("::")
        assert f"def {function}(" in (HERE / file).read_text(), f"{test} does not exist"


def test_every_route_in_the_readme_is_walked_by_a_test():
    text = _docs()
    covered = [(m.start(), m.start() + len(route)) for route in ROUTES for m in re.finditer(re.escape(route), text)]
    unwalked = [text[max(0, m.start() - 60):m.end() + 80] for m in _START.finditer(text)
                if not any(start <= m.start() < end for start, end in covered)]
    assert not unwalked, "routes in the docs that no e2e test walks (add the test to ROUTES):\n" + "\n".join(unwalked)
