"""A real browser for the UI tests: Playwright's sync API driving Debian's chromium (never `playwright install`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


from tests.chromium import CHROMIUM, CHROMIUM_ARGS, browser_or_skip

REPO = Path(__file__).resolve().parents[2]


def documentation() -> str:
    """The README and every page of the docs site, joined: the UI routes the tests hold the UI
    to are written there (docs/guides/dagster-ui.md, the demo's in docs/getting-started.md)."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    return "\n\n".join(page.read_text(encoding="utf-8") for page in pages)


@contextmanager
def ui_page(dagster_dev: Any) -> Iterator[Any]:
    """A page on the `dagster dev` UI's front page; on a failure, the screenshot and page text go with it."""
    sync_playwright = browser_or_skip()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(60_000)
            # Dagster's first-visit "Join the Dagster community" dialog opens a second after a page
            # loads, over whatever dialog a test has opened by then: say it was dismissed in this
            # browser (its localStorage key), and dismiss it should it show anyway.
            page.add_init_script("window.localStorage.setItem('communityNux', '\"1\"')")
            page.add_locator_handler(page.get_by_text("Join the Dagster community"),
                                     lambda: page.get_by_role("button", name="Skip").click())
            page.goto(dagster_dev.url + "/")
            try:
                yield page
            except Exception as exc:
                # What the page showed when a step failed: a CI log alone cannot say. Every tab
                # of the browser: a link may have opened one (the viewer, from a metadata URL).
                for index, shown in enumerate(page.context.pages):
                    shot = dagster_dev.log.with_name(f"failure-{os.getpid()}-{id(exc)}-{index}.png")
                    shown.screenshot(path=str(shot))
                    exc.add_note(f"screenshot: {shot} ({shown.url})\npage text:\n{shown.inner_text('body')[:3000]}")
                raise
        finally:
            browser.close()


def type_into(box: Any, text: str) -> None:
    """Type ``text`` into ``box`` once it is visible, and check it holds it: keys typed before a
    dialog's box has focus go nowhere (seen in CI on a cold start)."""
    box.wait_for()
    box.press_sequentially(text)
    assert box.input_value() == text, box.input_value()


def launch_new_partition(page: Any, name: str) -> None:
    """After **Save** in the add-partition dialog: **Launch 1 run** of ``name``.

    Dagster's dialog selects a new partition once it has refetched its list; on a loaded
    machine it sometimes never does and keeps saying "0 partitions" (seen in CI). The README
    says what a user does then, and so does this: reload the page, open **Materialize all**
    again and pick the name under **Select a partition or create one**.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    launch = page.get_by_role("button", name="Launch 1 run")
    try:
        launch.wait_for(timeout=30_000)
    except PlaywrightTimeout:
        page.reload()
        page.get_by_role("button", name="Materialize all").click()
        page.get_by_text("Select a partition or create one", exact=True).first.click()
        page.get_by_text(name, exact=True).first.click()
    launch.click()


def add_and_launch_partition(page: Any, name: str) -> None:
    """In the open **Materialize all** dialog: **Add a partition** → ``name`` → **Save**, then
    launch it from a reloaded page (**Materialize all** → **Select a partition or create one**
    → ``name`` → **Launch 1 run**): a dialog opened after the reload lists the new partition,
    which the first one, under load, sometimes never shows ("0 partitions")."""
    page.get_by_text("Add a partition", exact=True).first.click()
    box = page.get_by_placeholder("name", exact=True)
    type_into(box, name)
    page.get_by_role("button", name="Save").click()
    box.wait_for(state="hidden")
    page.reload()
    page.get_by_role("button", name="Materialize all").click()
    page.get_by_text("Select a partition or create one", exact=True).first.click()
    page.get_by_text(name, exact=True).first.click()
    page.get_by_role("button", name="Launch 1 run").click()


def search_jobs(page: Any, text: str) -> None:
    """**Jobs** → **Search and filter jobs** → ``text``, Enter (the list shows only the jobs in view)."""
    page.get_by_text("Jobs", exact=True).first.click()
    page.get_by_label("Search and filter jobs").wait_for(state="attached")
    page.locator(".CodeMirror").first.click()  # the box is a CodeMirror editor: typed into, not filled
    page.keyboard.type(text)
    page.keyboard.press("Enter")
    other = "fix__run" if "quick" in text else "quick__run"  # another eval's job: gone once filtered
    page.locator(f'a[href$="/jobs/{other}"]').first.wait_for(state="detached")
    page.keyboard.press("Escape")  # the box's suggestions stay open over the list until then
    page.locator("[data-radix-popper-content-wrapper]").first.wait_for(state="detached")
