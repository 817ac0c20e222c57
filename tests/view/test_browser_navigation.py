"""Reading a run in chromium as a user does: answers in the matrix, keys to move, diffs and reasons.

`evalh view` runs as a process over a run written here (tests/view/support.py ``write_run``):
three cases × two variants, one answer a script, one an attribute breakout, one huge; the
candidate fails ``b_huge`` and ``d_last``. The keys are pressed for real; the answers are
expanded by clicking. On a failure, the page's screenshot and text go with the error.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.browser_page import Watched, fresh_page, watch
from tests.support.http_server import free_port
from tests.support.viewer_process import ServedRuns, running_viewer
from tests.view.support import write_run

pytestmark = pytest.mark.e2e

RUN = "2026-03-01T00-00-00-000000_answers"
SCRIPT = "<script>window.__pwned = 1</script>"
BREAKOUT = '"><img src=x onerror="window.__pwned = 2">'
HUGE = "word " * 5_000
DETAIL = {"judge_model": "judge-model", "pass_when": "all",
          "assertions": [{"text": "names a suburb", "required": True, "passed": False,
                          "reason": f"it names none {BREAKOUT}"}]}


# The trend eval's three runs, oldest first: the cells each fails (the candidate falls 100% → 0%).
TREND = ((), (("c1", "candidate"),), (("c1", "candidate"), ("c2", "candidate"), ("c2", "main")))


LIVE = "2026-04-01T00-00-00-000000_live"  # a run still running: no summary, its traces growing


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedRuns]:
    root = tmp_path_factory.mktemp("navigation")
    runs = root / "runs"
    write_run(runs, RUN, {
        "a_script": {"main": f"the answer is {SCRIPT}", "candidate": f"an answer is {BREAKOUT}"},
        "b_huge": {"main": HUGE, "candidate": "short"},
        "c_plain": {"main": "Carlton is near the city", "candidate": "Fitzroy is near the city"},
        "d_last": {"main": "fine", "candidate": "wrong"},
    }, failing=(("b_huge", "candidate"), ("d_last", "candidate")), detail=DETAIL)
    for day, failing in enumerate(TREND, start=1):
        run_dir = write_run(runs, f"2026-01-0{day}T00-00-00-000000_trend",
                            {"c1": {"main": f"Carlton, day {day}", "candidate": "y"},
                             "c2": {"main": "x", "candidate": "y"}},
                            eval_name="trend", failing=failing)
        meta = json.loads((run_dir / "run.json").read_text())
        (run_dir / "run.json").write_text(json.dumps({**meta, "created_at": f"2026-01-0{day}T00:00:00Z"}))
    write_run(runs, LIVE, {"c1": {"main": "first answer"}}, eval_name="live", complete=None)
    log = root / "view.log"
    with running_viewer(runs, free_port(), {**os.environ, "EVALH_RUNS_DIR": str(runs)}, log) as url:
        yield ServedRuns(url=url, runs=runs, log=log)


@pytest.fixture
def watched(served: ServedRuns, chromium: Any) -> Iterator[Watched]:
    with fresh_page(chromium, served.log) as page:
        seen = watch(page)
        yield seen
        # Nothing injected ran, the viewer's own script raised nothing, nothing came from elsewhere.
        assert seen.dialogs == [] and seen.errors == []
        assert page.evaluate("() => window.__pwned") is None
        assert all(url.startswith(served.url + "/") for url in seen.requests), seen.requests


def _focused_cell(page: Any) -> tuple[str, str]:
    """(case id, variant) of the matrix cell that has the keyboard focus."""
    found: list[str] = page.evaluate("""() => {
        const link = document.activeElement;
        const cell = link.closest('td.cell');
        const row = cell.parentElement;
        const header = cell.closest('table').rows[0].cells[cell.cellIndex];
        return [row.cells[0].innerText.trim(), header.innerText.trim()];
    }""")
    return found[0], found[1]


def test_the_matrix_shows_each_answer_and_expands_it_on_a_click(served, watched):
    page = watched.page
    page.goto(f"{served.url}/runs/{RUN}")
    cell = page.locator("table.matrix tr", has=page.get_by_role("link", name="a_script", exact=True)) \
        .locator("td.cell").nth(1)
    answer = cell.locator("details.answer")
    assert answer.locator("pre").is_hidden()
    answer.locator("summary").click()
    assert answer.locator("pre").is_visible()
    assert answer.locator("pre").inner_text() == f"an answer is {BREAKOUT}"
    assert page.locator("table.matrix img").count() == 0
    huge = page.locator("table.matrix tr", has=page.get_by_role("link", name="b_huge", exact=True)) \
        .locator("td.cell").first
    huge.locator("summary").click()
    more = huge.get_by_role("link", name="more characters on the case page")
    assert more.is_visible()
    more.click()
    page.wait_for_url(f"{served.url}/runs/{RUN}/cases/b_huge")
    assert page.locator("section.column pre.answer").first.inner_text() == HUGE.rstrip("\n")


def test_keys_move_through_the_matrix_and_open_a_cell(served, watched):
    page = watched.page
    page.goto(f"{served.url}/runs/{RUN}")
    page.keyboard.press("j")
    assert _focused_cell(page) == ("a_script", "main")
    page.keyboard.press("j")
    assert _focused_cell(page) == ("a_script", "candidate")
    page.keyboard.press("n")
    assert _focused_cell(page) == ("b_huge", "candidate")
    page.keyboard.press("k")
    assert _focused_cell(page) == ("b_huge", "main")
    page.keyboard.press("p")
    assert _focused_cell(page) == ("a_script", "main")
    page.keyboard.press("f")
    assert _focused_cell(page) == ("b_huge", "candidate")
    page.keyboard.press("f")
    assert _focused_cell(page) == ("d_last", "candidate")
    page.keyboard.press("o")
    opened = page.locator("td.cell:focus-within details.answer pre")
    assert opened.is_visible() and opened.inner_text() == "wrong"
    page.keyboard.press("f")  # past the last failure: stays
    assert _focused_cell(page) == ("d_last", "candidate")
    # After a click on an answer, the keys go on from that cell.
    page.locator("table.matrix tr", has=page.get_by_role("link", name="a_script", exact=True)) \
        .locator("td.cell").nth(1).locator("summary").click()
    page.keyboard.press("j")
    assert _focused_cell(page) == ("b_huge", "main")
    page.keyboard.press("f")
    assert _focused_cell(page) == ("b_huge", "candidate")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{served.url}/runs/{RUN}/cases/b_huge")


def test_keys_in_a_text_box_type_text_not_move(served, watched):
    page = watched.page
    page.goto(f"{served.url}/runs/{RUN}")
    page.locator("input[name=text]").click()
    page.keyboard.type("jnf")
    assert page.locator("input[name=text]").input_value() == "jnf"
    assert page.evaluate("() => document.activeElement.name") == "text"


def test_keys_and_links_walk_from_case_to_case(served, watched):
    page = watched.page
    page.goto(f"{served.url}/runs/{RUN}/cases/a_script")
    assert page.get_by_text("first case").is_visible()
    page.keyboard.press("n")
    page.wait_for_url(f"{served.url}/runs/{RUN}/cases/b_huge")
    page.keyboard.press("f")
    page.wait_for_url(f"{served.url}/runs/{RUN}/cases/d_last")
    page.keyboard.press("p")
    page.wait_for_url(f"{served.url}/runs/{RUN}/cases/c_plain")
    page.get_by_role("link", name="next case →").click()
    page.wait_for_url(f"{served.url}/runs/{RUN}/cases/d_last")
    assert page.get_by_text("last case").is_visible()
    page.get_by_role("link", name="← previous case").click()
    page.wait_for_url(f"{served.url}/runs/{RUN}/cases/c_plain")
    page.keyboard.press("u")
    page.wait_for_url(f"{served.url}/runs/{RUN}")


def test_a_case_shows_the_word_diff_and_the_judges_reasons_as_text(served, watched):
    page = watched.page
    page.goto(f"{served.url}/runs/{RUN}/cases/a_script")
    diff = page.locator("pre.word-diff").first
    removed, added = diff.locator("del").all_inner_texts(), diff.locator("ins").all_inner_texts()
    assert removed[0] == "the" and added[0] == "an"
    assert "<script>window.__pwned" in removed and '"><img' in " ".join(added)
    reasons = page.locator("ul.assertions li.not-held")
    assert reasons.count() == 2  # one per variant
    assert " ".join(reasons.first.inner_text().split()) == f"✗ not held names a suburb it names none {BREAKOUT}"
    assert page.locator("main img").count() == 0
    page.goto(f"{served.url}/runs/{RUN}/cases/c_plain")
    assert page.locator("pre.word-diff del").all_inner_texts() == ["Carlton"]
    assert page.locator("pre.word-diff ins").all_inner_texts() == ["Fitzroy"]


def test_the_history_charts_each_variants_pass_rate_over_the_runs(served, watched):
    page = watched.page
    page.goto(f"{served.url}/")
    page.locator("h2#eval-trend").get_by_role("link", name="history").click()
    page.wait_for_url(f"{served.url}/evals/trend")
    chart = page.locator("figure.rate-chart")
    assert chart.locator("svg[role=img]").is_visible()
    # In the history's order of variants (these runs have no summary: by name).
    assert chart.locator("figcaption").inner_text().split() == ["candidate", "main"]
    lines = chart.locator("g.rate-line")
    assert lines.count() == 2
    titles = lines.first.locator("circle title").all_text_contents()
    assert [t.split(": ")[1] for t in titles] == ["100.0% (2/2)", "50.0% (1/2)", "0.0% (0/2)"]
    heights = [float(c.get_attribute("cy")) for c in lines.first.locator("circle").all()]
    assert heights == sorted(heights) and heights[0] < heights[-1]  # falling: each point lower than the last


def test_searching_the_runs_list_and_the_answers_across_runs(served, watched):
    page = watched.page
    page.goto(f"{served.url}/")
    box = page.get_by_placeholder("part of a run id or eval name")
    box.fill("trend")
    box.press("Enter")
    page.wait_for_url(re.compile(r"/\?.*q=trend"))
    assert page.locator("h2[id^=eval-]").all_inner_texts() == ["trend history"]
    answers = page.get_by_placeholder("text in an answer or input")
    answers.fill("FITZROY")
    answers.press("Enter")
    page.wait_for_url(re.compile(r"/search\?q=FITZROY"))
    hits = page.locator("table.search tr:has(td)")
    assert hits.count() == 1
    assert hits.first.locator("pre.excerpt").inner_text() == "Fitzroy is near the city"
    hits.first.get_by_role("link", name="c_plain").click()
    page.wait_for_url(f"{served.url}/runs/{RUN}/cases/c_plain")
    page.goto(f"{served.url}/search?q=" + "onerror")
    assert page.locator("table.search pre.excerpt").first.inner_text() == f"an answer is {BREAKOUT}"
    assert page.locator("main img").count() == 0


def test_a_comparison_lists_the_unchanged_cases_on_a_click(served, watched):
    page = watched.page
    page.goto(f"{served.url}/evals/trend")
    newest = "2026-01-03T00-00-00-000000_trend"
    page.locator("table.rates tr", has=page.get_by_role("link", name=newest, exact=True)) \
        .get_by_role("link", name="compare with previous").click()
    page.wait_for_url(re.compile(r"/compare/"))
    assert page.locator("ul.flips.unchanged").count() == 0
    page.get_by_role("link", name="list the 1 unchanged cases").first.click()
    page.wait_for_url(re.compile(r"unchanged=1"))
    unchanged = page.locator("ul.flips.unchanged")
    assert unchanged.count() == 2
    # main, then candidate (the runs' order of variants).
    assert [" ".join(t.split()) for t in unchanged.all_inner_texts()] == ["c1 passed in both", "c1 failed in both"]
    unchanged.nth(1).get_by_role("link", name="c1").click()
    page.wait_for_url(re.compile(r"/case\?id=c1&variant=candidate"))
    assert page.locator("pre.word-diff").inner_text() == "y"  # the same answer in both runs


def test_the_history_shows_a_cases_answers_across_runs(served, watched):
    page = watched.page
    page.goto(f"{served.url}/evals/trend")
    row = page.locator("table.history tr:has(td)").first
    assert row.locator("td").first.inner_text().split() == ["flaky", "c1"]
    # Newest run first; per run, the variants in the history's order (candidate, main).
    answers = row.locator("td.cell details.answer")
    assert answers.count() == 6
    newest_main = answers.nth(1)
    assert newest_main.locator("summary").inner_text() == "Carlton, day 3"
    newest_main.locator("summary").click()
    assert newest_main.locator("pre").is_visible() and newest_main.locator("pre").inner_text() == "Carlton, day 3"
    assert answers.nth(5).locator("summary").inner_text() == "Carlton, day 1"


def test_a_running_runs_page_follows_its_traces_until_it_is_complete(served, watched):
    page = watched.page
    page.goto(f"{served.url}/runs/{LIVE}")
    assert page.locator("p.live").is_visible()
    assert page.locator("table.matrix tr:has(td)").count() == 1
    # The run goes on: a second cell's trace and result land, as the runner appends them.
    run_dir = served.runs / LIVE
    for name in ("traces.jsonl", "results.jsonl"):
        first = json.loads((run_dir / name).read_text().splitlines()[0])
        later = {**first, "case_id": "c2"}
        if name == "traces.jsonl":
            later["output"] = {"final_answer": f"second answer {BREAKOUT}"}
        with (run_dir / name).open("a") as handle:
            handle.write(json.dumps(later) + "\n")
    # No key pressed, no click: the page reloads itself and shows the new cell.
    page.locator("table.matrix tr:has(td)").nth(1).wait_for()
    assert page.locator("table.matrix details.answer summary").all_inner_texts() == [
        "first answer", f"second answer {BREAKOUT}"]
    assert page.locator("main img").count() == 0
    # The summary says the run is complete: the next reload is the last one.
    (run_dir / "summary.yaml").write_text(json.dumps({"run_id": LIVE, "completeness": {
        "complete": True, "expected_cells": 2, "present_cells": 2}}))
    page.locator("p.live").wait_for(state="detached")
    assert page.locator('meta[http-equiv="refresh"]').count() == 0
