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
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.chromium import CHROMIUM, CHROMIUM_ARGS, browser_or_skip
from tests.support.readiness import wait_until_answering
from tests.view.support import hostile_run
from tests.support.http_server import free_port

pytestmark = pytest.mark.e2e

STARTUP_TIMEOUT_S = 120
# (run id, created_at), oldest first.
RUNS = (("2026-06-01T00-00-00-000000_hostile", "2026-06-01T00:00:00Z"),
        ("slow-1", "2026-06-02T00:00:00.500000Z"),
        ("2026-06-03T00-00-00-000000_hostile", "2026-06-03T00:00:00Z"))


@dataclass
class Served:
    url: str
    log: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("order")
    runs = root / "runs"
    for run_id, created in RUNS:
        meta_path = hostile_run(runs, run_id) / "run.json"
        meta = json.loads(meta_path.read_text())
        meta_path.write_text(json.dumps({**meta, "created_at": created}))
    port = free_port()
    log = root / "view.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "evalh_pipeline.cli", "view", str(runs), "--port", str(port)],
                                cwd=root, env={**os.environ, "EVALH_RUNS_DIR": str(runs)}, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(proc, f"{url}/healthz", log, what="evalh view", timeout_s=STARTUP_TIMEOUT_S)
        yield Served(url=url, log=log)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture
def page(served: Served) -> Iterator[Any]:
    """A chromium page on the viewer; on a failure, its screenshot and text go with the error."""
    sync_playwright = browser_or_skip()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            opened = browser.new_page(viewport={"width": 1400, "height": 900})
            opened.set_default_timeout(60_000)
            try:
                yield opened
            except Exception as exc:
                shot = served.log.with_name(f"failure-{os.getpid()}-{id(exc)}.png")
                opened.screenshot(path=str(shot), full_page=True)
                exc.add_note(f"screenshot: {shot}\npage text:\n{opened.inner_text('body')[:3000]}")
                raise
        finally:
            browser.close()


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
