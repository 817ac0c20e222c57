"""The review queue in chromium, keyboard only: 20 cells labelled with y/n (blind: the judge's
verdict shows after each answer), then `u` back to the run page, whose judge calibration now
counts the 20 labels and corrects the pass rates; a system's hostile answer (markup, script,
terminal escapes, a bidi override) is shown as inert text."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalh_pipeline.queries.calibration import run_calibration
from evalh_pipeline.store.labels import read_labels
from evalh_pipeline.store.run_dir import RunDirectory
from tests.support.browser_page import fresh_page
from tests.support.http_server import free_port
from tests.support.judged_run import judged_run
from tests.support.viewer_process import ServedRuns, running_viewer

pytestmark = pytest.mark.e2e

# Judged a failure by mentions_paris (no "Paris" in it) on both variants: one content, asked first.
HOSTILE = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
           "\x1b]0;pwned\x07\x1b[2J\u202eevil")
QUEUE = "/runs/first/review?evaluator=mentions_paris"
# With EVALH_UPDATE_SCREENSHOTS=1 the README's screenshots of the queue are written (as test_browser.py does).
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedRuns]:
    root = tmp_path_factory.mktemp("review_browser")
    # 24 cases: the candidate fails mentions_paris on every third case (8), both variants on case_1.
    eval_path, _ = judged_run(root / "toy", "first", cases=24, answers={"case_1": HOSTILE})
    runs = eval_path.parent / "runs"
    log = root / "view.log"
    with running_viewer(runs, free_port(), {**os.environ, "EVALH_RUNS_DIR": str(runs)}, log) as url:
        yield ServedRuns(url=url, runs=runs, log=log)


@pytest.fixture
def page(served: ServedRuns, chromium: Any) -> Iterator[Any]:
    """A chromium page; on a failure, its screenshot and text go with the error."""
    with fresh_page(chromium, served.log) as opened:
        dialogs: list[str] = []
        opened.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        opened.dialogs = dialogs
        yield opened


def test_a_hostile_answer_is_shown_as_inert_text(served, page):
    page.goto(served.url + QUEUE + "&blind=0")
    answer = page.locator("pre.review-answer")
    # case_1 is among the first failures (by case id): find it with the keyboard (j: next).
    while "case_1" != page.locator(".review-case").inner_text():
        with page.expect_navigation():
            page.keyboard.press("j")
    text = answer.inner_text()
    assert text.startswith('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">')
    # Control characters are written out, never passed to the page as they are.
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\u202eevil" in text
    assert page.evaluate("window.__pwned") is None and page.dialogs == []
    assert page.locator("pre.review-answer script, pre.review-answer img").count() == 0


def test_twenty_cells_labelled_with_the_keyboard_show_in_the_run_pages_calibration(served, page):
    page.goto(served.url + QUEUE)
    assert page.locator(".judge-verdict").count() == 0  # blind: no verdict before the answer
    assert "failed" not in page.locator("section.review-item").inner_text()
    keys = ["n"] * 9 + ["y"] * 9 + ["n"] * 2  # the 9 failures asked first, then 11 sampled passes
    verdicts = []
    for key in keys:
        case = page.locator(".review-case").inner_text()
        with page.expect_navigation():
            page.keyboard.press(key)
        last = page.locator("p.last-answer")
        assert f"Case {case} " in last.inner_text()  # the verdict on the cell just answered, shown after
        assert f"you said {'pass' if key == 'y' else 'fail'}" in last.inner_text()
        verdicts.append(last.locator(".judge-said").inner_text())
        assert page.locator(".judge-verdict").count() == 0  # still blind for the next one
    assert verdicts == ["fail"] * 9 + ["pass"] * 11
    shots = SCREENSHOTS if os.environ.get("EVALH_UPDATE_SCREENSHOTS") == "1" else served.log.parent
    page.screenshot(path=str(shots / "review.png"), full_page=False)
    labels = read_labels(served.runs, "toy")
    assert len(labels) == 20 and {x.evaluator for x in labels.values()} == {"mentions_paris"}

    with page.expect_navigation():
        page.keyboard.press("u")  # up to the run page
    assert page.url == served.url + "/runs/first"
    expected = run_calibration(RunDirectory(served.runs / "first"), served.runs, "toy", "base")["mentions_paris"]
    assert (expected.calibration.labels, expected.calibration.agreement) == (20, 18 / 20)
    row = page.locator("table.calibration tr", has=page.locator("td", has_text="mentions_paris"))
    assert row.locator(".calibration-labels").inner_text() == "20"
    assert "90.0%" in row.inner_text() and row.locator(".calibration-note").inner_text() == ""
    corrected = expected.by_variant["candidate"].corrected
    assert corrected is not None
    cell = page.locator("table.corrected tr", has=page.locator("td", has_text="candidate")).locator(".corrected-rate")
    assert cell.inner_text().startswith(f"{corrected.estimate * 100:.1f}%")
    assert f"[{corrected.ci_low * 100:.1f}%, {corrected.ci_high * 100:.1f}%]" in cell.inner_text()
    top, bottom = page.locator("#calibration").bounding_box(), page.locator("table.corrected").bounding_box()
    assert top is not None and bottom is not None
    page.screenshot(path=str(shots / "calibration.png"), full_page=True,
                    clip={"x": 0, "y": top["y"] - 10, "width": 1400, "height": bottom["y"] + bottom["height"] - top["y"] + 20})
