"""A comparison of two runs lists the cases they judged alike when asked (queries/view_compare.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from evalh_pipeline.queries.view_compare import unchanged_cases
from evalh_pipeline.store.run_dir import RunDirectory
from evalh_pipeline.view.app import create_app
from tests.view.support import write_run

A, B = "2026-01-01T00-00-00-000000_answers", "2026-01-02T00-00-00-000000_answers"
HOSTILE = '"><script>window.__pwned = 1</script>'
CASES = {"c1": {"main": "x", "candidate": "y"}, "c2": {"main": "x", "candidate": "y"},
         HOSTILE: {"main": "x", "candidate": "y"}}


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    write_run(folder, A, CASES, failing=(("c2", "candidate"), (HOSTILE, "main")))
    write_run(folder, B, CASES, failing=(("c1", "candidate"), (HOSTILE, "main")))
    return folder


def test_the_unchanged_cases_are_those_with_the_same_pass_fraction(runs):
    found = unchanged_cases(RunDirectory(runs / A), RunDirectory(runs / B), limit=10)
    assert found.counts == {"candidate": 1, "main": 3}
    assert found.cases["main"] == sorted([("c1", 1.0), ("c2", 1.0), (HOSTILE, 0.0)])
    assert found.cases["candidate"] == [(HOSTILE, 1.0)]
    assert unchanged_cases(RunDirectory(runs / A), RunDirectory(runs / B), limit=1).cases["main"] == [(HOSTILE, 0.0)]


def test_the_comparison_counts_the_unchanged_and_lists_them_on_request(runs):
    client = TestClient(create_app(runs), base_url="http://127.0.0.1:8790")
    page = client.get(f"/compare/{A}/{B}").text
    assert "main: 0 regressed, 0 improved, 3 unchanged" in page
    assert "candidate: 1 regressed, 1 improved, 1 unchanged" in page
    assert 'class="flips unchanged"' not in page and "list the 3 unchanged cases" in page
    listed = client.get(f"/compare/{A}/{B}", params={"unchanged": "1"}).text
    rows = re.findall(r'<ul class="flips unchanged">(.*?)</ul>', listed, re.S)
    assert len(rows) == 2
    assert "failed in both" in rows[0] and rows[0].count("passed in both") == 2
    assert "<script" not in rows[0] and "&#34;&gt;&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in rows[0]
