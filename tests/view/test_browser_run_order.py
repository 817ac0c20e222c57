"""`evalh view` orders runs by when they were made, never by their names, in chromium.

A run named in the Dagster UI (``slow-1``) has no timestamp in its id: by name it would sort
above every timestamped run, and "compare with previous" would open a newer run. Three runs of
one eval are written here (the oldest with a timestamp id, then ``slow-1``, then a newer
timestamp id); the runs list and the history must show them newest first by run.json's
``created_at``, each "compare with previous" opening the run made just before it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser_page import fresh_page
from tests.support.http_server import free_port
from tests.support.viewer_process import ServedRuns, running_viewer
from tests.view.support import hostile_run

pytestmark = pytest.mark.e2e

# (run id, created_at), oldest first.
RUNS = (("2026-06-01T00-00-00-000000_hostile", "2026-06-01T00:00:00Z"),
        ("slow-1", "2026-06-02T00:00:00.500000Z"),
        ("2026-06-03T00-00-00-000000_hostile", "2026-06-03T00:00:00Z"))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedRuns]:
    root = tmp_path_factory.mktemp("order")
    runs = root / "runs"
    for run_id, created in RUNS:
        meta_path = hostile_run(runs, run_id) / "run.json"
        meta = json.loads(meta_path.read_text())
        meta_path.write_text(json.dumps({**meta, "created_at": created}))
    log = root / "view.log"
    with running_viewer(runs, free_port(), {**os.environ, "EVALH_RUNS_DIR": str(runs)}, log) as url:
        yield ServedRuns(url=url, runs=runs, log=log)


@pytest.fixture
def page(served: ServedRuns, chromium: Any) -> Iterator[Any]:
    """A chromium page on the viewer; on a failure, its screenshot and text go with the error."""
    with fresh_page(chromium, served.log) as opened:
        yield opened


def _listed(page: Any, rows: str) -> list[str]:
    """The run ids of the table's rows, top to bottom (each row's first link)."""
    return [row.locator("a").first.inner_text() for row in page.locator(rows).all()]


NEWEST_FIRST = [run_id for run_id, _ in reversed(RUNS)]


def test_the_runs_list_shows_runs_newest_first_by_when_they_were_made(served, page):
    page.goto(served.url + "/")
    assert _listed(page, "h2#eval-hostile + table.runs tr:has(td)") == NEWEST_FIRST
    for newer, older in zip(NEWEST_FIRST, NEWEST_FIRST[1:]):
        page.goto(served.url + "/")
        page.locator("tr", has=page.get_by_role("link", name=newer, exact=True)) \
            .get_by_role("link", name="compare with previous").click()
        page.wait_for_url(f"{served.url}/compare/{older}/{newer}")


def test_the_history_shows_runs_newest_first_by_when_they_were_made(served, page):
    page.goto(served.url + "/evals/hostile")
    assert _listed(page, "table.rates tr:has(td)") == NEWEST_FIRST
    for newer, older in zip(NEWEST_FIRST, NEWEST_FIRST[1:]):
        page.goto(served.url + "/evals/hostile")
        page.locator("tr", has=page.get_by_role("link", name=newer, exact=True)) \
            .get_by_role("link", name="compare with previous").click()
        page.wait_for_url(f"{served.url}/compare/{older}/{newer}")
