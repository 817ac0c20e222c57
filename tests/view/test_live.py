"""A running run's page reloads itself while its traces grow, and stops once it is complete or still."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from starlette.testclient import TestClient

from evalh_pipeline.view.app import LIVE_REFRESH_S, LIVE_WINDOW_S, create_app
from tests.view.support import write_run

RUN = "2026-04-01T00-00-00-000000_live"
REFRESH = f'<meta http-equiv="refresh" content="{LIVE_REFRESH_S}">'


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    return tmp_path / "runs"


def _page(runs: Path) -> str:
    return TestClient(create_app(runs), base_url="http://127.0.0.1:8790").get(f"/runs/{RUN}").text


def test_a_run_without_a_summary_whose_traces_just_changed_reloads(runs):
    write_run(runs, RUN, {"c1": {"main": "x"}}, complete=None)
    html = _page(runs)
    assert REFRESH in html and '<p class="live">Running:' in html


def test_a_run_whose_summary_says_incomplete_reloads_while_it_changes(runs):
    write_run(runs, RUN, {"c1": {"main": "x"}}, complete=False)
    assert REFRESH in _page(runs)


def test_a_complete_run_does_not_reload(runs):
    write_run(runs, RUN, {"c1": {"main": "x"}}, complete=True)
    html = _page(runs)
    assert "http-equiv" not in html and 'class="live"' not in html


def test_a_run_left_still_past_the_window_does_not_reload(runs):
    run_dir = write_run(runs, RUN, {"c1": {"main": "x"}}, complete=None)
    for name in ("traces.jsonl", "results.jsonl"):
        stat = (run_dir / name).stat()
        os.utime(run_dir / name, (stat.st_atime, stat.st_mtime - LIVE_WINDOW_S - 1))
    assert "http-equiv" not in _page(runs)


def test_a_summary_that_does_not_say_is_taken_as_finished(runs):
    run_dir = write_run(runs, RUN, {"c1": {"main": "x"}}, complete=None)
    (run_dir / "summary.yaml").write_text(yaml.safe_dump({"run_id": RUN}))  # eval-harness's, or an older one
    assert "http-equiv" not in _page(runs)
