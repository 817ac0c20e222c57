"""`evalh view` as a user meets it: a real server process, Debian's chromium, real runs.

The runs are made by `evalh run` (the quickstart eval twice, the coding agent with its
workspace, an eval whose system answers with markup and script) beside two run folders in
eval-harness 2.0.2's layout carrying eval-harness's own verdicts (tests/view/support.py).
Every page is opened in the browser; each test screenshots its page. With
``EVALH_UPDATE_SCREENSHOTS=1`` the screenshots are written to docs/screenshots/ (the viewer
guide, docs/guides/viewer.md, shows them); otherwise to the test's temporary folder.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalh_pipeline.store.baselines import promote
from evalh_pipeline.store.run_dir import RunDirectory
from tests.support.evalh_process import run_evalh
from tests.support.paths import REPO
from tests.view.support import (
    HOSTILE_ANSWERS,
    eval_harness_run,
    reference,
    write_hostile_eval,
)
from tests.support.http_server import free_port
from tests.support.browser_page import Watched, watch
from tests.support.viewer_process import running_viewer

pytestmark = pytest.mark.e2e

SCREENSHOTS = REPO / "docs" / "screenshots"
BEFORE = "2026-05-01T10-00-00_regressions"
AFTER = "2026-05-02T10-00-00_regressions"


@dataclass
class Viewer:
    url: str
    runs: Path
    shots: Path
    run_ids: dict[str, list[str]] = field(default_factory=dict)  # eval -> run ids, oldest first


def _made_run(proc: subprocess.CompletedProcess[str], runs: Path, eval_name: str) -> str:
    found = sorted(p.name for p in runs.iterdir() if p.name.endswith(f"_{eval_name}"))
    assert found, f"evalh run made no {eval_name} run:\n{proc.stdout}\n{proc.stderr}"
    return found[-1]


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    root = tmp_path_factory.mktemp("viewer")
    runs = root / "runs"
    runs.mkdir()
    home = root / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "EVALH_RUNS_DIR": str(runs)}
    made: dict[str, list[str]] = {}
    hostile_yaml = write_hostile_eval(root / "hostile")
    for eval_yaml, name in ((REPO / "evals/quickstart/eval.yaml", "quickstart"),
                            (REPO / "evals/quickstart/eval.yaml", "quickstart"),
                            (REPO / "evals/coding_agent/eval.yaml", "coding_agent"),
                            (hostile_yaml, "hostile")):
        proc = run_evalh(["run", str(eval_yaml)], env, eval_yaml.parent, timeout=300)
        made.setdefault(name, []).append(_made_run(proc, runs, name))
    promote(RunDirectory(runs / made["quickstart"][0]))  # the pointer `evalh promote` writes
    eval_harness_run(runs, BEFORE)
    eval_harness_run(runs, AFTER, fixed=("case_00",))
    made["regressions"] = [BEFORE, AFTER]

    log = root / "view.log"
    with running_viewer(runs, free_port(), env, log) as url:
        shots = SCREENSHOTS if os.environ.get("EVALH_UPDATE_SCREENSHOTS") == "1" else root / "screenshots"
        shots.mkdir(parents=True, exist_ok=True)
        yield Viewer(url=url, runs=runs, shots=shots, run_ids=made)


@pytest.fixture
def watched(chromium: Any, viewer: Viewer) -> Iterator[Watched]:
    context = chromium.new_context(viewport={"width": 1440, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(60_000)
    seen = watch(page, console_errors=True)
    try:
        yield seen
    finally:
        # Nothing ran, nothing was fetched from anywhere but the viewer, on any page.
        assert seen.dialogs == []
        assert all(url.startswith(viewer.url + "/") for url in seen.requests), seen.requests
        context.close()


def _shot(viewer: Viewer, page: Any, name: str) -> None:
    page.screenshot(path=str(viewer.shots / f"{name}.png"), full_page=True)


def test_the_runs_list_shows_every_eval_newest_first_with_the_baseline_marked(viewer, watched):
    page = watched.page
    page.goto(viewer.url + "/")
    for name in ("quickstart", "coding_agent", "hostile", "regressions"):
        assert page.locator(f"h2#eval-{name}").count() == 1
    quick = page.locator("h2#eval-quickstart + table.runs tr")
    first, second = viewer.run_ids["quickstart"]
    assert second in quick.nth(1).inner_text() and first in quick.nth(2).inner_text()
    assert "baseline" in quick.nth(2).inner_text()
    assert "agent_main 100.0% 7/7 [64.6%, 100.0%]" in " ".join(quick.nth(1).inner_text().split())
    _shot(viewer, page, "runs")
    page.select_option("select[name=eval]", "regressions")
    page.get_by_role("button", name="Filter").click()
    assert page.locator("h2").count() == 1 and "regressions" in page.locator("h2").inner_text()


def test_a_run_shows_its_matrix_and_its_regressions(viewer, watched):
    page = watched.page
    run_id = viewer.run_ids["quickstart"][1]
    page.goto(f"{viewer.url}/runs/{run_id}")
    assert "agent_experimental" in page.locator("table.variants").inner_text()
    regressed_cells = page.locator("table.matrix td.cell .flip.regressed")
    assert regressed_cells.count() == 3  # the quickstart's candidate regresses on three cases
    assert page.locator("table.comparison").inner_text().count("McNemar") == 1
    _shot(viewer, page, "run")
    page.check("input[name=regressed]")
    page.get_by_role("button", name="Filter").click()
    assert page.locator("table.matrix tr").count() == 1 + 3


def test_a_regressed_cell_shows_both_traces_side_by_side(viewer, watched):
    page = watched.page
    run_id = viewer.run_ids["quickstart"][1]
    page.goto(f"{viewer.url}/runs/{run_id}?regressed=1")
    page.locator("table.matrix tr td:first-child a").first.click()
    page.wait_for_url(re.compile(r"/cases/"))
    columns = page.locator(".columns section.column h2")
    headings = columns.all_inner_texts()
    assert any(h.startswith("agent_main") for h in headings) and any(h.startswith("agent_experimental") for h in headings)
    assert page.locator("section.column .badge.fail").count() >= 1
    assert page.locator(".hl .gd").count() >= 1 and page.locator(".hl .gi").count() >= 1  # the answers diffed
    assert page.locator("table.tools").count() == 2  # each side's tool calls with their arguments
    _shot(viewer, page, "cell")


def test_a_workspace_cell_shows_the_changed_files_as_a_coloured_diff(viewer, watched):
    page = watched.page
    run_id = viewer.run_ids["coding_agent"][0]
    page.goto(f"{viewer.url}/runs/{run_id}")
    page.locator("table.matrix tr td:first-child a").first.click()
    page.wait_for_url(re.compile(r"/cases/"))
    assert page.locator("table.files").count() == 2
    assert "src/pricing.py" in page.locator("table.files").first.inner_text()
    assert page.locator(".hl .gi").count() >= 1
    assert "tests_pass" in page.locator("table.results").first.inner_text()
    page.locator("table.files").first.scroll_into_view_if_needed()
    _shot(viewer, page, "workspace_diff")


def test_an_eval_harness_run_shows_eval_harness_regressions(viewer, watched):
    page = watched.page
    page.goto(f"{viewer.url}/runs/{BEFORE}?regressed=1")
    shown = page.locator("table.matrix tr td:first-child a").all_inner_texts()
    assert shown == reference()["comparison"]["candidate"]["regressions"]
    _shot(viewer, page, "eval_harness_run")


def test_comparing_two_runs_opens_the_improved_case_side_by_side(viewer, watched):
    page = watched.page
    page.goto(f"{viewer.url}/compare/{BEFORE}/{AFTER}")
    improved = page.locator("ul.flips.improved a")
    assert improved.all_inner_texts() == ["case_00"]
    _shot(viewer, page, "compare")
    improved.first.click()
    page.wait_for_url(re.compile(r"/case\?"))
    headings = page.locator("section.column h2").all_inner_texts()
    assert [h.split()[0] for h in headings] == [BEFORE, AFTER]
    _shot(viewer, page, "compare_cell")


def test_two_variants_of_a_run_compare_with_their_paired_statistics(viewer, watched):
    page = watched.page
    run_id = viewer.run_ids["quickstart"][1]
    page.goto(f"{viewer.url}/runs/{run_id}/variants?a=agent_main&b=agent_experimental")
    assert page.locator("ul.flips.regressed li").count() == 3
    overall = page.locator("table.comparison tr").nth(1).inner_text()
    assert "-42.9 pp" in overall and "0.25" in overall and "3 / 0" in overall  # McNemar's exact p of 3 against 0
    _shot(viewer, page, "variants")


def test_the_history_shows_pass_rates_across_runs_and_the_flaky_case_first(viewer, watched):
    page = watched.page
    page.goto(f"{viewer.url}/evals/regressions")
    assert page.locator("table.rates tr").count() == 1 + 2
    first_case = page.locator("table.history tr").nth(2)
    assert "flaky" in first_case.inner_text() and "case_00" in first_case.inner_text()
    _shot(viewer, page, "history")
    page.goto(f"{viewer.url}/evals/quickstart")
    assert page.locator("table.rates tr").count() == 1 + 2


def test_hostile_content_renders_as_inert_text(viewer, watched):
    page = watched.page
    run_id = viewer.run_ids["hostile"][0]
    page.goto(f"{viewer.url}/runs/{run_id}")
    links = page.locator("table.matrix tr td:first-child a")
    assert sorted(links.all_inner_texts()) == sorted(HOSTILE_ANSWERS)
    for case_id, answer in HOSTILE_ANSWERS.items():
        page.goto(f"{viewer.url}/runs/{run_id}")
        page.locator("table.matrix tr td:first-child a", has_text=case_id).first.click()
        page.wait_for_load_state("load")
        assert page.url.startswith(f"{viewer.url}/runs/{run_id}/cases/")
        # The answer is there, character for character, as text.
        assert page.locator("pre.answer").first.inner_text() == answer
        assert page.evaluate("() => window.__pwned") is None
        assert page.locator("script").count() == page.locator('script[src="/static/keys.js"]').count() == 1
        assert page.locator("img").count() == 0
        assert page.locator('a[href^="javascript:"]').count() == 0
        assert page.locator("#evil").count() == 0
        if case_id == "script":
            _shot(viewer, page, "hostile")
    # The browser resolves ../ before asking; encoded, it is a case id and nothing more.
    page.goto(f"{viewer.url}/runs/{run_id}/cases/..%2F..%2F..%2F..%2Fetc%2Fshadow")
    assert "root:" not in page.content()
    response = page.goto(f"{viewer.url}/runs/..%2F..%2F..%2Fetc%2Fpasswd")
    assert response is not None and response.status == 404 and "root:" not in page.content()


def test_the_screenshots_the_viewer_guide_shows_exist(viewer):
    if os.environ.get("EVALH_UPDATE_SCREENSHOTS") != "1":
        pytest.skip("screenshots are only written to docs/screenshots/ with EVALH_UPDATE_SCREENSHOTS=1")
    guide = (REPO / "docs" / "guides" / "viewer.md").read_text()
    for shot in sorted(viewer.shots.glob("*.png")):
        assert f"](../screenshots/{shot.name})" in guide, shot.name
