"""The viewer shows a run in which no system answered as failed, with its cause, on the run
page and in the runs list; a run with answers keeps its completeness."""

from __future__ import annotations

import asyncio
import re

from starlette.testclient import TestClient

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.view.app import create_app
from tests.support.evals import STEADY_SYSTEMS, write_eval


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _traced(folder, systems: str, run_id: str):
    spec = load_eval(write_eval(folder, cases=2, systems=systems))
    run_dir = prepare_cases(spec, run_id).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    return run_dir


def test_a_run_without_answers_is_failed_with_its_cause(tmp_path):
    run_dir = _traced(tmp_path / "toy", STEADY_SYSTEMS.replace("stub_agent", "stub_agnet"), "silent")
    _traced(tmp_path / "toy", STEADY_SYSTEMS, "answered")  # same runs folder
    client = TestClient(create_app(run_dir.path.parent), base_url="http://127.0.0.1:8790")
    page = client.get("/runs/silent").text
    assert re.search(r'<span class="incomplete">failed</span>: <span class="failure-cause">config_error: cannot '
                     r"import module (&#39;|')stub_agnet", page), _text(page)
    assert '<span class="complete">' not in page
    answered = client.get("/runs/answered").text
    assert "failure-cause" not in answered and '<span class="incomplete">failed</span>' not in answered
    listing = client.get("/").text
    assert '<span class="incomplete">failed</span>' in _row(listing, "silent")
    assert "failed" not in _row(listing, "answered")


def _row(listing: str, run_id: str) -> str:
    """The runs list's row of ``run_id``."""
    row = listing[listing.index(f'href="/runs/{run_id}"'):]
    return row[:row.index("</tr>")]
