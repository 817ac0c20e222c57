"""The viewer's pages in process (Starlette's test client): what they show, and what they refuse.

The browser tests (test_browser.py) drive the same pages in chromium against `evalh view` as
a process; these check the pages' content and the server's rules on run folders written here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from evalh_pipeline.view.app import CONTENT_SECURITY_POLICY, create_app
from tests.view.support import HOSTILE_ANSWERS, eval_harness_run, hostile_run, reference

BEFORE = "2026-05-01T10-00-00_regressions"
AFTER = "2026-05-02T10-00-00_regressions"


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    eval_harness_run(folder, BEFORE)
    eval_harness_run(folder, AFTER, fixed=("case_00",))
    hostile_run(folder)
    (tmp_path / "secret.txt").write_text("root:x:0:0 outside the runs folder\n")
    return folder


@pytest.fixture
def client(runs: Path) -> TestClient:
    return TestClient(create_app(runs), base_url="http://127.0.0.1:8790")


def _matrix_cases(html: str) -> list[str]:
    """The case ids of the matrix's rows, in order (as their links encode them)."""
    return re.findall(r'<tr><td><a href="[^"]*/cases/([^"?]+)">', html)


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_runs_list_shows_each_eval_harness_run_with_its_pass_rates_and_intervals(client):
    page = client.get("/")
    assert page.status_code == 200
    text = _text(page.text)
    assert BEFORE in text and AFTER in text and "hostile" in text
    # eval-harness's own counts (12/12 and 7/12), with their 95% Wilson intervals.
    assert "main 100.0% 12/12 [75.8%, 100.0%]" in text
    assert "candidate 58.3% 7/12 [32.0%, 80.7%]" in text
    assert text.index(AFTER) < text.index(BEFORE)  # newest first


def test_a_run_page_shows_the_regressions_eval_harness_recorded(client):
    page = client.get(f"/runs/{BEFORE}")
    assert page.status_code == 200
    text = _text(page.text)
    expected = reference()["comparison"]["candidate"]["regressions"]
    assert f"Regressed on candidate ({len(expected)})" in text
    regressed = client.get(f"/runs/{BEFORE}?regressed=1")
    assert _matrix_cases(regressed.text) == expected


@pytest.mark.parametrize("query, expected", [
    ("failed=1", {"case_00", "case_01", "case_02", "case_03", "case_04", "case_05", "case_06", "case_07",
                  "case_08", "case_09", "case_10", "case_11"}),
    ("evaluator=lookup", {"case_00", "case_05", "case_10"}),
    ("text=Carlton", {"case_02", "case_05", "case_08", "case_11"}),
    ("improved=1", set()),
])
def test_the_matrix_filters_pick_the_cases_sql_finds(client, query, expected):
    page = client.get(f"/runs/{BEFORE}?{query}")
    assert page.status_code == 200
    found = set(_matrix_cases(page.text))
    # failed=1: a case where some variant did not pass, by eval-harness's verdicts and pass_criteria.
    if query == "failed=1":
        verdicts = reference()["verdicts"]
        expected = {c for c in expected if not _passes(verdicts[c]["candidate"]) or not _passes(verdicts[c]["main"])}
    assert found == expected


def _passes(verdicts: dict[str, str]) -> bool:
    return verdicts["lookup"] == "pass" and "pass" in (verdicts["mentions_suburb"], verdicts["price_fact"])


def test_the_metadata_filter_matches_a_key_and_a_value(client):
    run = "2026-06-01T00-00-00-000000_hostile"
    everything = client.get(f"/runs/{run}", params={"meta_key": "<b>kind</b>"})
    assert len(_matrix_cases(everything.text)) == len(HOSTILE_ANSWERS)
    none = client.get(f"/runs/{run}", params={"meta_key": "<b>kind</b>", "meta_value": "other"})
    assert _matrix_cases(none.text) == []


def test_comparing_two_runs_lists_the_case_that_improved(client):
    page = client.get(f"/compare/{BEFORE}/{AFTER}")
    assert page.status_code == 200
    text = _text(page.text)
    assert "candidate: 0 regressed, 1 improved" in text
    link = re.search(r'<a href="(/compare/[^"]+case[^"]+)">case_00</a>', page.text)
    assert link is not None
    side = client.get(link.group(1).replace("&amp;", "&"))
    assert side.status_code == 200
    assert side.text.count('<section class="column">') == 2  # the two runs' traces side by side


def test_the_history_marks_the_case_whose_verdict_changed(client):
    page = client.get("/evals/regressions")
    assert page.status_code == 200
    assert "1 of 12 changed verdict" in _text(page.text)
    first = re.search(r'<tr class="unstable"><td><span class="badge partial">flaky</span> (\S+)</td>', page.text)
    assert first is not None and first.group(1) == "case_00"


def test_hostile_answers_are_shown_as_text_never_as_markup(client):
    run = "2026-06-01T00-00-00-000000_hostile"
    for case_id in ("script", "img", "link"):
        page = client.get(f"/runs/{run}/cases/{case_id}")
        assert page.status_code == 200
        html = page.text
        assert "<script>" not in html and "<img" not in html and "javascript:" not in html.replace(
            "javascript:alert(3)", "")  # the text may appear, escaped, never as an attribute
        assert not re.search(r'<a [^>]*href="javascript:', html)
        assert not re.search(r"<[a-z]+[^>]* on[a-z]+=", html)
        assert "&lt;script&gt;" in html or "&lt;img" in html or "&lt;a href" in html
    run_page = client.get(f"/runs/{run}").text
    assert "<img" not in run_page and "&lt;img src=x onerror=alert(6)&gt;" in run_page


def test_a_case_id_that_looks_like_a_path_is_only_an_id(client):
    run = "2026-06-01T00-00-00-000000_hostile"
    page = client.get(f"/runs/{run}/cases/..%2F..%2Fetc%2Fpasswd")
    assert page.status_code == 200
    assert "a case id that looks like a path" in page.text
    assert "root:x:0" not in page.text


@pytest.mark.parametrize("path", [
    "/runs/..%2Fsecret.txt",
    "/runs/%2E%2E",
    "/runs/..%2F..%2Fetc%2Fpasswd",
    "/runs/2026-06-01T00-00-00-000000_hostile/cases/..%2F..%2F..%2Fsecret.txt",
    "/runs/2026-06-01T00-00-00-000000_hostile/case?id=../../../secret.txt",
    "/compare/..%2F..%2Fetc/passwd",
    "/evals/..%2F..%2Fetc",
    "/static/..%2F..%2Fview%2Fapp.py",
    "/static/../app.py",
    "/runs/baselines",
])
def test_nothing_outside_the_runs_folder_is_served(client, path):
    page = client.get(path)
    assert page.status_code == 404, path
    assert "root:x:0" not in page.text and "import" not in page.text


def test_a_run_folder_linked_from_elsewhere_is_not_a_run(client, runs, tmp_path):
    outside = eval_harness_run(tmp_path / "elsewhere", "2026-07-01T00-00-00_regressions")
    (runs / outside.name).symlink_to(outside, target_is_directory=True)
    assert client.get(f"/runs/{outside.name}").status_code == 404
    assert outside.name not in client.get("/").text


def test_every_answer_carries_a_policy_that_runs_only_the_viewers_own_script(client):
    for path in ("/", f"/runs/{BEFORE}", "/static/style.css", "/nope"):
        headers = client.get(path).headers
        assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
        # Scripts from the viewer's own origin only: no inline script, handler or eval.
        assert "script-src 'self';" in headers["content-security-policy"]
        assert "unsafe" not in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"


def test_the_viewer_only_reads(client, runs):
    before = sorted((p.relative_to(runs), p.stat().st_size) for p in runs.rglob("*"))
    for method in ("post", "put", "delete", "patch"):
        assert getattr(client, method)(f"/runs/{BEFORE}").status_code == 405
    for path in ("/", f"/runs/{BEFORE}", f"/runs/{BEFORE}/cases/case_00", f"/compare/{BEFORE}/{AFTER}",
                 "/evals/regressions"):
        assert client.get(path).status_code == 200
    assert sorted((p.relative_to(runs), p.stat().st_size) for p in runs.rglob("*")) == before


def test_a_host_the_viewer_is_not_served_as_is_refused(runs):
    rebound = TestClient(create_app(runs), base_url="http://attacker.example")
    assert rebound.get("/").status_code == 400


def test_a_run_that_cannot_be_read_says_so_and_the_others_still_show(client, runs):
    broken = runs / "2026-08-01T00-00-00-000000_broken"
    broken.mkdir()
    (broken / "run.json").write_text('{"run_id": "x", "eval_name": "broken", "variants": ["a"]}')
    (broken / "traces.jsonl").write_text('{"case_id": "c1", "variant_name": "a", "latency_ms": [}\n')
    (broken / "summary.yaml").write_text("variants: [unclosed\n")
    listing = client.get("/")
    assert listing.status_code == 200 and "summary.yaml unreadable" in listing.text and BEFORE in listing.text
    page = client.get(f"/runs/{broken.name}")
    assert page.status_code == 422 and "could not read" in page.text


def test_the_runs_list_shows_each_evals_newest_runs_and_pages_through_the_rest(client, runs):
    import shutil

    for day in range(3, 25):
        shutil.copytree(runs / BEFORE, runs / f"2026-05-{day:02d}T10-00-00_regressions")
    listing = client.get("/").text
    shown = re.findall(r'<td><a href="/runs/([^"]+_regressions)">', listing)
    assert len(shown) == 20 and shown[0] == "2026-05-24T10-00-00_regressions"
    assert "24 runs." in listing and "all runs of regressions" in listing
    everything = client.get("/", params={"eval": "regressions"}).text
    assert len(re.findall(r'<td><a href="/runs/([^"]+_regressions)">', everything)) == 24
    assert "hostile" not in re.sub(r"<select.*?</select>", "", everything, flags=re.S)


def test_a_trace_of_unexpected_shapes_still_shows(client, runs):
    odd = runs / "2026-09-01T00-00-00-000000_odd"
    odd.mkdir()
    (odd / "run.json").write_text('{"run_id": "odd", "eval_name": "odd", "variants": ["a"]}')
    base = {"run_id": "odd", "case_id": "c1", "variant_name": "a", "sample": 0}
    (odd / "traces.jsonl").write_text(json.dumps({
        **base, "started_at": "x", "finished_at": "x", "latency_ms": "slow", "output": "just text",
        "messages": {"role": "user"}, "tool_calls": "none", "tool_results": [1, None, "x"], "metrics": [],
        "error": {"type": "<b>boom</b>", "message": None, "stack": ["not", "text"]}, "extra": "x",
        "input": ["a", "list"]}) + "\n")
    (odd / "results.jsonl").write_text(json.dumps({
        **base, "evaluator": "e", "passed": "yes", "detail": "text", "reason": None, "error": "bad"}) + "\n")
    page = client.get(f"/runs/{odd.name}/cases/c1")
    assert page.status_code == 200
    assert "&lt;b&gt;boom&lt;/b&gt;" in page.text and "<b>boom" not in page.text
    # The matrix reads the records strictly (as the summary does): a latency of "slow" is named, not skipped.
    matrix = client.get(f"/runs/{odd.name}")
    assert matrix.status_code == 422 and "traces.jsonl" in matrix.text


def test_a_run_page_plots_each_rate_limits_concurrency_as_svg_with_its_label_as_text(client, runs):
    record = {"stage": "traces", "limit": "<script>alert(1)</script> (credential 1)", "ceiling": 8, "requests": 30,
              "rate_limited": 4, "gave_up": None, "levels": [[0.0, 8], [0.5, 4], [2.0, 6]], "paces": [[0.5, 10.0]]}
    (runs / AFTER / "rate_limits.jsonl").write_text(json.dumps(record) + "\n" + '{"torn')
    page = client.get(f"/runs/{AFTER}")
    assert page.status_code == 200
    assert "<script>alert(1)</script>" not in page.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in page.text
    [points] = re.findall(r'<polyline points="([^"]+)"', page.text)
    ys = [float(p.split(",")[1]) for p in points.split()]
    # Steps 8 -> 4 -> 6 in a 120-high box (level 8 at the top, 0 at the bottom).
    assert [round(y) for y in ys] == [4, 4, 60, 60, 32, 32]
    assert "30 requests, 4 rate limited" in _text(page.text)
    assert "Rate limits" not in client.get(f"/runs/{BEFORE}").text
