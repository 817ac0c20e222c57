"""Searching runs: the runs list by run id or eval name, and answers and inputs across runs.

The answers are hostile (a script, an attribute breakout, a huge answer, bytes that are not
UTF-8): every excerpt comes out as text and bounded.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from evalh_pipeline.queries.view_search import EXCERPT_CHARS, search_runs
from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.view.app import create_app
from tests.view.support import write_run

SCRIPT = "<script>window.__pwned = 1</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
OLD, NEW, OTHER = ("2026-01-01T00-00-00-000000_answers", "2026-01-02T00-00-00-000000_answers",
                   "2026-01-03T00-00-00-000000_other")


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    for run_id, eval_name, answers in (
            (OLD, "answers", {"c1": {"main": f"Carlton {SCRIPT}", "candidate": "Fitzroy"}}),
            (NEW, "answers", {"c1": {"main": "fitzroy " * 10_000 + "CARLTON " + "tail " * 10_000,
                                     "candidate": f"carlton {BREAKOUT}"},
                              "c2": {"main": "nothing", "candidate": "nothing"}}),
            (OTHER, "other", {"x1": {"main": "PLACEHOLDER carlton", "candidate": "carlton too"}})):
        run_dir = write_run(folder, run_id, answers, eval_name=eval_name)
        meta = json.loads((run_dir / "run.json").read_text())
        (run_dir / "run.json").write_text(json.dumps({**meta, "created_at": run_id[:10] + "T00:00:00Z"}))
    traces = folder / OTHER / "traces.jsonl"
    traces.write_bytes(traces.read_bytes().replace(b"PLACEHOLDER", b"\xff\xfe"))
    return folder


@pytest.fixture
def client(runs: Path) -> TestClient:
    return TestClient(create_app(runs), base_url="http://127.0.0.1:8790")


def test_a_search_finds_answers_in_any_case_newest_run_first(runs):
    result = search_runs([RunDirectory(runs / r) for r in (OTHER, NEW, OLD)], "carlton", limit=10)
    assert [(h.run_id, h.case_id, h.variant, h.field) for h in result.hits] == [
        (OTHER, "x1", "candidate", "answer"),  # the line that is not UTF-8 matches nothing
        (NEW, "c1", "candidate", "answer"), (NEW, "c1", "main", "answer"), (OLD, "c1", "main", "answer")]
    huge = result.hits[2].excerpt
    assert len(huge) == EXCERPT_CHARS and "CARLTON" in huge  # around the match, not the whole answer
    assert not result.more and result.searched == [OTHER, NEW, OLD]


def test_a_search_stops_at_its_limit_and_says_more_may_match(runs):
    result = search_runs([RunDirectory(runs / r) for r in (NEW, OLD)], "carlton", limit=2)
    assert len(result.hits) == 2 and result.more and result.searched == [NEW, OLD]  # OLD found the third


def test_a_search_finds_the_input_when_the_answer_does_not_match(runs):
    result = search_runs([RunDirectory(runs / NEW)], "question c2", limit=10)
    assert {(h.case_id, h.field) for h in result.hits} == {("c2", "input")}


def test_the_search_page_shows_excerpts_as_text(client):
    html = client.get("/search", params={"q": "Carlton"}).text
    rows = re.findall(r"<tr><td><a href=\"/runs/([^\"]+)\">", html)
    assert rows == [OTHER, NEW, NEW, OLD]
    assert "Carlton &lt;script&gt;window.__pwned = 1&lt;/script&gt;" in html
    assert "carlton &#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<img" not in html and html.count("<script") == 1  # the viewer's own keys.js
    assert len(html) < 20_000
    only = client.get("/search", params={"q": "carlton", "eval": "other"}).text
    assert re.findall(r"<tr><td><a href=\"/runs/([^\"]+)\">", only) == [OTHER]


def test_a_search_for_markup_is_text_in_the_page_and_in_sql(client):
    html = client.get("/search", params={"q": "'); DROP TABLE x; --<script>"}).text
    assert "nothing found" in html and 'value="&#39;); DROP TABLE x; --&lt;script&gt;"' in html


def test_the_runs_list_keeps_the_runs_whose_id_or_eval_has_the_text(client):
    html = client.get("/", params={"q": "OTH"}).text
    assert re.findall(r'<h2 id="eval-([^"]+)"', html) == ["other"]
    html = client.get("/", params={"q": "2026-01-01"}).text
    assert OLD in html and NEW not in html
    # The same text searches the answers, one click away.
    assert '<form class="filters" method="get" action="/search">' in html
