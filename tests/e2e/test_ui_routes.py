"""The docs' ways around the Dagster UI ("Finding your way in the Dagster UI"), walked in chromium.

Each test checks that the docs states the route word for word, then clicks it through in a
real browser against `dagster dev` (and `evalh view` as a process where the route goes
there), so a route that stops existing in the UI fails here. Clicks are counted where the
README gives a count.
"""

from __future__ import annotations

import os
import re

import pytest

from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.store.stage_runs import recorded_stage_runs
from tests.support.evalh_process import run_evalh
from tests.e2e.browser import documentation, search_jobs, ui_page
from tests.support.http_server import free_port
from tests.e2e.support import wait_for
from tests.support.viewer_process import running_viewer

pytestmark = pytest.mark.e2e

EVAL = "routed"
ASSETS = ("baseline", "cases", "drift", "results", "summary", "traces")


def _docs() -> str:
    return " ".join(documentation().split())


def _env(dagster_dev, **extra: str) -> dict[str, str]:
    return {**os.environ, "DAGSTER_HOME": str(dagster_dev.home), **extra}


def _cli_run(dagster_dev, **env: str):
    """One `evalh run` of the eval; its run folder (the newest of the eval's runs)."""
    eval_yaml = dagster_dev.repo / "evals" / EVAL / "eval.yaml"
    made = run_evalh(["run", str(eval_yaml)], _env(dagster_dev, **env), dagster_dev.repo, timeout=300)
    assert made.returncode == 0, made.stderr
    return sorted((eval_yaml.parent / "runs").glob("2*"), key=lambda p: p.name)[-1]


def _asset_link(page, asset: str):
    """The shown link to ``<eval>/<asset>`` in a list of assets (each name is also in a hidden copy)."""
    return page.locator(f'a[href^="/assets/{EVAL}/{asset}"]:visible').first


def _partition(page, run_id: str):
    """A run's entry in the asset's Partitions list (shown cut in the middle; the full id is a hidden copy)."""
    return page.locator(f'[title="{run_id}"]').last  # the first is the selection above the list


def _open_eval_by_prefix(page, url: str) -> None:
    """**Catalog** → the folder button beside the search box → `<eval>/`."""
    page.goto(url + "/")
    page.get_by_text("Catalog", exact=True).first.click()
    page.get_by_role("img", name="folder", exact=True).first.click()
    page.get_by_text(f"{EVAL}/", exact=True).first.click()


def test_each_eval_is_one_entry_of_the_catalog_by_key_prefix(dagster_dev):
    text = _docs()
    assert ("**Catalog** → the folder button beside the search box → `<eval>/` → its six assets.") in text
    assert ("(**Catalog** → the folder button beside the search box → `quickstart/` → `summary` → "
            "**Partitions**: the run and its metadata") in text
    run_id = _cli_run(dagster_dev).name
    with ui_page(dagster_dev) as page:
        _open_eval_by_prefix(page, dagster_dev.url)
        page.wait_for_url(re.compile(rf"/assets/{EVAL}\b"))
        for asset in ASSETS:  # the six, and only this eval's
            _asset_link(page, asset).wait_for()
        assert page.locator('a[href^="/assets/quick/"]:visible').count() == 0  # another eval's

        # The demo's route: → `summary` → **Partitions**: the run is there.
        _open_eval_by_prefix(page, dagster_dev.url)
        _asset_link(page, "summary").click()
        page.get_by_text("Partitions", exact=True).first.click()
        _partition(page, run_id).wait_for()


def test_an_evals_jobs_are_listed_by_searching_its_name(dagster_dev):
    assert ("**Jobs** → **Search and filter jobs** → the eval's name, Enter → `<eval>__run`, `<eval>__judge`, "
            "`<eval>__promote`, `<eval>__judge_consistency`") in _docs()
    with ui_page(dagster_dev) as page:
        search_jobs(page, EVAL)
        listed = {a.get_attribute("href").rsplit("/", 1)[-1] for a in page.locator('a[href*="/jobs/"]:visible').all()}
        assert listed == {f"{EVAL}__run", f"{EVAL}__judge", f"{EVAL}__promote", f"{EVAL}__judge_consistency"}, listed


def test_a_runs_pass_rates_are_on_its_partition_and_the_pickers_filter_its_id_by_time(dagster_dev):
    assert ("**Catalog** → `<eval>/` → `summary` → **Partitions** → the run's id shows its latest "
            "materialization (`pass_rate/<variant>`") in _docs()
    run_id = _cli_run(dagster_dev).name
    day = run_id[:10]  # a run id evalh makes starts with its UTC start time
    with ui_page(dagster_dev) as page:
        _open_eval_by_prefix(page, dagster_dev.url)
        _asset_link(page, "summary").click()
        page.get_by_text("Partitions", exact=True).first.click()
        _partition(page, run_id).click()
        for variant in ("base", "candidate"):
            page.get_by_text(f"pass_rate/{variant}", exact=True).first.wait_for()
        page.get_by_text("viewer", exact=True).first.wait_for()

        # The judge job's picker lists bare ids, filtered as you type the day.
        search_jobs(page, EVAL)
        page.locator(f'a[href$="/jobs/{EVAL}__judge"]:visible').first.click()
        page.get_by_role("button", name="Materialize all").click()
        page.get_by_text("Select a partition or create one", exact=True).first.click()
        page.get_by_placeholder("Filter partitions").fill(day)
        page.get_by_text(run_id, exact=True).first.wait_for()


def test_from_the_summary_to_a_trace_in_two_clicks_and_back_to_the_dagster_run_in_one(dagster_dev, tmp_path):
    text = _docs()
    assert ("**Catalog** → `<eval>/` → `summary` → the latest materialization's `viewer` link → "
            "a cell of the matrix") in text
    assert "a run's page in `evalh view` → **Dagster:** `run <id>`" in text
    port = free_port()
    viewer = f"http://127.0.0.1:{port}"
    # The link is configuration: made while no viewer runs, followed once one does.
    run_dir = _cli_run(dagster_dev, EVALH_VIEWER_URL=viewer)
    run_id = run_dir.name
    dagster_run = recorded_stage_runs(RunDirectory(run_dir)).stages["summary"].dagster_run_id
    env = _env(dagster_dev, EVALH_DAGSTER_URL=dagster_dev.url)
    with running_viewer(run_dir.parent, port, env, tmp_path / "view.log"), ui_page(dagster_dev) as page:
        _open_eval_by_prefix(page, dagster_dev.url)
        _asset_link(page, "summary").click()
        link = page.locator(f'a[href="{viewer}/runs/{run_id}"]').first  # the `viewer` metadata
        clicks = 0
        if link.get_attribute("target") == "_blank":  # Dagster opens metadata URLs in a new tab
            with page.context.expect_page() as opened:
                link.click()
            run_page = opened.value
        else:
            link.click()
            run_page = page
        clicks += 1
        run_page.locator("table.matrix td.cell a").first.click()
        clicks += 1
        run_page.get_by_text("Traces side by side", exact=True).wait_for()
        assert run_page.url.startswith(f"{viewer}/runs/{run_id}/cases/")
        assert clicks == 2

        # Back: the run's page in the viewer → **Dagster:** `run <id>`, one click.
        page.goto(f"{viewer}/runs/{run_id}")
        page.get_by_role("link", name=f"run {dagster_run[:8]}", exact=True).click()
        page.wait_for_url(f"{dagster_dev.url}/runs/{dagster_run}")
        page.get_by_text(f"{EVAL}__run", exact=True).first.wait_for()
        # The partition link opens the run's partition of the summary.
        page.goto(f"{viewer}/runs/{run_id}")
        page.get_by_role("link", name="partition", exact=True).click()
        page.wait_for_url(re.compile(rf"/assets/{EVAL}/summary\?.*partition={re.escape(run_id)}"))
        page.get_by_text("pass_rate/base", exact=True).first.wait_for()


def test_a_partition_without_a_run_folder_is_deleted_from_the_assets_menu(dagster_dev):
    assert ("the asset's page (e.g. `<eval>/cases`) → the **▾** beside **Materialize…** → **Delete partitions** → "
            "**Select a partition** → the run's id → **Delete 1 partition**") in _docs()
    instance = dagster_dev.instance()
    partitions = f"{EVAL}__runs"
    instance.add_dynamic_partitions(partitions, ["orphan-1"])  # as a UI run that wrote nothing leaves it
    with ui_page(dagster_dev) as page:
        page.goto(f"{dagster_dev.url}/assets/{EVAL}/cases")
        page.get_by_text("Materialize…", exact=True).first.wait_for()
        page.locator("button:has([aria-label=arrow_drop_down])").first.click()  # the ▾
        page.get_by_role("menuitem", name="Delete partitions").click()
        page.get_by_text("Select a partition", exact=True).first.click()
        page.get_by_text("orphan-1", exact=True).first.click()
        page.get_by_text(f"Delete {partitions} partitions", exact=True).click()  # closes the list, not the dialog
        page.get_by_role("button", name="Delete 1 partition").click()
        wait_for(lambda: "orphan-1" not in instance.get_dynamic_partitions(partitions), 120,
                 "the partition to be deleted", dagster_dev.log)
