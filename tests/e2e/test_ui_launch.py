"""The README's UI route, driven in a real browser (Playwright + Debian's chromium) against `dagster dev`.

Jobs → `<eval>__run` → Materialize all: one click path, nothing to type. The run must cover
every variant, and the summary asset's page must show the pass rate of each variant.
"""

from __future__ import annotations

import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import dagster as dg
import pytest

pytestmark = pytest.mark.e2e

CHROMIUM = Path(os.environ.get("EVALH_CHROMIUM", "/usr/bin/chromium"))
ARGS = ["--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
        "--disable-gpu", "--disable-dev-shm-usage"]
README = Path(__file__).resolve().parents[2] / "README.md"


def _browser_or_skip():
    """Playwright's sync API, or a loud skip (a failure when EVALH_REQUIRE_BROWSER=1, as in CI)."""
    reason = ""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        reason = "the `playwright` package is not installed (pip install -e '.[dev]')"
    if not reason and not CHROMIUM.exists():
        reason = f"no browser at {CHROMIUM}: `apt-get install chromium` (./dev test does it when run as root)"
    if reason:
        if os.environ.get("EVALH_REQUIRE_BROWSER") == "1":
            pytest.fail(f"browser test required but cannot run: {reason}")
        pytest.skip(f"BROWSER TEST NOT RUN: {reason}")
    return sync_playwright


def test_the_readme_route_launches_a_whole_run_and_the_summary_shows_every_variant(dagster_dev):
    sync_playwright = _browser_or_skip()
    # The route as the README states it, so the two cannot drift apart.
    assert "**Jobs** → **`<eval>__run`** → **Materialize all**" in README.read_text()
    instance = dagster_dev.instance()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(60_000)
            # Dagster's first-visit "Join the Dagster community" dialog: dismiss it whenever it shows.
            page.add_locator_handler(page.get_by_text("Join the Dagster community"),
                                     lambda: page.get_by_role("button", name="Skip").click())
            page.goto(dagster_dev.url + "/")
            page.get_by_text("Jobs", exact=True).first.click()                  # 1
            page.get_by_text("quick__run", exact=True).first.click()            # 2
            page.get_by_role("button", name="Materialize all").click()          # 3

            deadline = time.monotonic() + 240
            run = None
            while time.monotonic() < deadline:
                runs = instance.get_runs(dg.RunsFilter(job_name="quick__run"))
                if runs and runs[0].is_finished:
                    run = runs[0]
                    break
                time.sleep(2)
            assert run is not None, f"no finished quick__run run\n{dagster_dev.log.read_text()[-4000:]}"
            assert run.status == dg.DagsterRunStatus.SUCCESS
            assert run.tags.get("dagster/from_ui") == "true"
            events = {e.dagster_event.event_specific_data.materialization.asset_key.path[-1]:
                      e.dagster_event.event_specific_data.materialization.metadata
                      for e in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)}
            assert set(events) == {"cases", "traces", "results", "summary", "drift"}
            summary = events["summary"]
            assert summary["complete"].value is True
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
        finally:
            browser.close()


def test_the_summary_page_shows_unsynced_once_results_were_rejudged_after_an_evaluator_changed(dagster_dev):
    """Data versions: results carry the version of results.jsonl, so the summary that read the old
    results shows "Unsynced" in the UI once they were re-judged with a changed evaluator."""
    from evalh_pipeline.runner.loading import load_eval
    from evalh_pipeline.defs.definitions import build_definitions
    from tests.conftest import run_evalh

    sync_playwright = _browser_or_skip()
    instance = dagster_dev.instance()
    eval_yaml = dagster_dev.repo / "evals" / "versioned" / "eval.yaml"
    made = run_evalh(["run", str(eval_yaml)], {**os.environ, "DAGSTER_HOME": str(dagster_dev.home)},
                     dagster_dev.repo, timeout=240)
    assert made.returncode == 0, made.stderr
    (run,) = instance.get_runs(dg.RunsFilter(job_name="versioned__run"))
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(60_000)
            page.add_locator_handler(page.get_by_text("Join the Dagster community"),
                                     lambda: page.get_by_role("button", name="Skip").click())
            page.goto(f"{dagster_dev.url}/assets/versioned/summary")
            page.get_by_text("pass_rate/base", exact=True).first.wait_for()
            assert "Unsynced" not in page.inner_text("body")

            # An evaluator changes; only `results` is rematerialized (as "Materialize selected" would).
            eval_yaml.write_text(eval_yaml.read_text().replace(
                "type: contains_text", "type: contains_text\n    config: {case_sensitive: true}"))
            defs, _ = build_definitions([load_eval(eval_yaml)])
            job = defs.resolve_job_def("versioned__judge")
            # In a thread of its own: Playwright's sync API keeps an event loop running in this one.
            with ThreadPoolExecutor(1) as pool:
                pool.submit(job.execute_in_process, instance=instance, tags={"evalh/run_id": run.tags["evalh/run_id"]},
                            asset_selection=[dg.AssetKey(["versioned", "results"])]).result()

            page.reload()
            page.get_by_text("Unsynced").first.hover()  # the tag's popover says why
            page.get_by_text("has a new data version").first.wait_for()
            assert "versioned / results" in page.inner_text("body")
        finally:
            browser.close()


def _shown(rate: float) -> str:
    """How the UI prints a float metadata value: ``1`` for 1.0, else Python's repr."""
    return "1" if rate == 1.0 else repr(rate)
