"""Answers on the viewer's pages: in the matrix's cells, diffed word by word, and the judge's reasons.

Every answer, reason and diff comes from the system under test or its judge: each test feeds
hostile text (a script, an attribute breakout, a huge answer, bytes that are not UTF-8) and
checks it comes out as text.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from evalh_pipeline.queries.view_answers import ANSWER_PREVIEW_CHARS
from evalh_pipeline.view.app import create_app
from evalh_pipeline.view.rendering import MAX_DIFF_TOKENS, word_diff
from tests.view.support import write_run

RUN = "2026-03-01T00-00-00-000000_answers"
SCRIPT = "<script>window.__pwned = 1</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
HUGE = "word " * 20_000
JUDGE_DETAIL = {
    "judge_model": "judge-model",
    "assertions": [
        {"text": f"names the suburb {SCRIPT}", "required": True, "passed": False, "reason": f"it names none {BREAKOUT}"},
        {"text": "is polite", "required": False, "passed": True, "reason": "says please"},
    ],
    "pass_when": "all",
    "rubric": {"score": 2, "scale": [1, 5], "pass_threshold": 4, "passed": False, "reason": f"thin {SCRIPT}"},
}


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    write_run(folder, RUN, {
        "a_script": {"main": f"the answer is {SCRIPT}", "candidate": f"an answer is {BREAKOUT}"},
        "b_huge": {"main": HUGE, "candidate": "short"},
        "c_plain": {"main": "Carlton is near the city", "candidate": "Fitzroy is near the city"},
    }, failing=(("b_huge", "candidate"),), detail=JUDGE_DETAIL, reason=f"judged {SCRIPT}")
    return folder


@pytest.fixture
def client(runs: Path) -> TestClient:
    return TestClient(create_app(runs), base_url="http://127.0.0.1:8790")


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))


def _no_injected_markup(html: str) -> None:
    parser = _Tags()
    parser.feed(html)
    names = [name for name, _ in parser.tags]
    assert "img" not in names
    assert names.count("script") == 1  # the viewer's own keys.js, nothing else
    assert all(("onerror", "alert(1)") not in attrs for _, attrs in parser.tags)


def test_each_matrix_cell_carries_the_start_of_its_answer_as_text(client):
    html = client.get(f"/runs/{RUN}").text
    _no_injected_markup(html)
    cells = re.findall(r'<td class="cell [a-z]+">(.*?)</td>', html, re.S)
    assert len(cells) == 6
    assert "the answer is &lt;script&gt;window.__pwned = 1&lt;/script&gt;" in cells[0]
    assert "an answer is &#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in cells[1]
    assert "Fitzroy is near the city" in cells[5]


def test_a_huge_answer_is_cut_in_its_cell_with_a_link_to_the_whole(client):
    html = client.get(f"/runs/{RUN}").text
    huge = re.findall(r'<td class="cell [a-z]+">(.*?)</td>', html, re.S)[2]
    shown = re.search(r"<pre>(.*?)</pre>", huge, re.S)
    assert shown is not None and len(shown.group(1)) == ANSWER_PREVIEW_CHARS
    assert f"{len(HUGE) - ANSWER_PREVIEW_CHARS:,} more characters on the case page" in huge
    assert len(html) < 60_000  # the page does not carry the whole answer


def test_a_case_page_diffs_two_answers_word_by_word_as_text(client):
    html = client.get(f"/runs/{RUN}/cases/a_script").text
    _no_injected_markup(html)
    diff = re.search(r'<pre class="word-diff">(.*?)</pre>', html, re.S)
    assert diff is not None
    # Word by word (the spaces between words match): what was removed and added, each escaped.
    assert diff.group(1) == ("<del>the</del><ins>an</ins> answer is "
                             "<del>&lt;script&gt;window.__pwned</del><ins>&#34;&gt;&lt;img</ins> "
                             "<del>=</del><ins>src=x</ins> <del>1&lt;/script&gt;</del><ins>onerror=alert(1)&gt;</ins>")


def test_a_word_diff_of_huge_answers_compares_their_start_and_says_so():
    html = str(word_diff(HUGE, HUGE.replace("word", "other", 1)))
    assert html.startswith('<pre class="word-diff"><del>word</del><ins>other</ins> word')
    assert f"compared on the first {MAX_DIFF_TOKENS:,} words and spaces" in html


def test_a_word_diff_escapes_whatever_each_side_holds():
    html = str(word_diff(f"{SCRIPT} same", {"key": BREAKOUT}))
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html and "&lt;img" in html


def test_the_judges_reasons_read_as_text_per_assertion(client):
    html = client.get(f"/runs/{RUN}/cases/c_plain").text
    _no_injected_markup(html)
    items = re.findall(r"<li class=\"(held|not-held)\">(.*?)</li>", html, re.S)
    assert len(items) == 4  # two assertions, two variants
    status, first = items[0]
    assert status == "not-held" and "✗ not held" in first
    assert "names the suburb &lt;script&gt;window.__pwned = 1&lt;/script&gt;" in first
    assert "it names none &#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in first
    assert items[1][0] == "held" and "(optional)" in items[1][1] and "says please" in items[1][1]
    assert "rubric score <strong>2</strong> on 1–5, pass threshold 4" in html
    assert "thin &lt;script&gt;" in html


def test_a_case_page_links_the_previous_next_and_next_failed_case(client):
    html = client.get(f"/runs/{RUN}/cases/a_script").text
    assert f'<a rel="next" href="/runs/{RUN}/cases/b_huge">' in html
    assert f'<a class="next-failure" href="/runs/{RUN}/cases/b_huge">' in html
    assert 'rel="prev"' not in html and "first case" in html
    last = client.get(f"/runs/{RUN}/cases/c_plain").text
    assert f'<a rel="prev" href="/runs/{RUN}/cases/b_huge">' in last and "last case" in last
    # Past the last failure, the next one is the first again.
    assert f'<a class="next-failure" href="/runs/{RUN}/cases/b_huge">' in last
    only = client.get(f"/runs/{RUN}/cases/b_huge").text
    assert "no other failure" in only


def test_answers_that_are_not_utf8_are_named_not_shown_as_markup(client, runs):
    traces = runs / RUN / "traces.jsonl"
    traces.write_bytes(traces.read_bytes().replace(b"the answer is", b"\xff\xfe<b>not utf-8</b>"))
    page = client.get(f"/runs/{RUN}")
    # The matrix reads the records strictly (as the summary does): the bad line is named.
    assert page.status_code == 422 and "traces.jsonl" in page.text and "invalid UTF-8" in page.text
    case = client.get(f"/runs/{RUN}/cases/a_script")
    assert case.status_code == 200 and "<b>not utf-8" not in case.text
    _no_injected_markup(case.text)


def test_the_history_shows_each_runs_answer_as_text(runs):
    later = write_run(runs, "2026-03-02T00-00-00-000000_answers", {
        "a_script": {"main": f"later {BREAKOUT}", "candidate": "later"},
        "b_huge": {"main": HUGE, "candidate": "short"}, "c_plain": {"main": "x", "candidate": "y"}})
    meta = json.loads((later / "run.json").read_text())
    (later / "run.json").write_text(json.dumps({**meta, "created_at": "2026-06-01T00:00:00Z"}))
    html = TestClient(create_app(runs), base_url="http://127.0.0.1:8790").get("/evals/answers").text
    _no_injected_markup(html)
    row = re.search(r"<tr[^>]*><td>(?:<span[^>]*>flaky</span> )?a_script</td>(.*?)</tr>", html, re.S)
    assert row is not None
    previews = re.findall(r"<summary>(.*?)</summary>", row.group(1), re.S)
    # The newer run first; per run, the variants by name (these runs have no summary).
    assert previews == ["later", "later &#34;&gt;&lt;img src=x onerror=alert(1)&gt;",
                        "an answer is &#34;&gt;&lt;img src=x onerror=alert(1)&gt;",
                        "the answer is &lt;script&gt;window.__pwned = 1&lt;/script&gt;"]
    assert html.count("more characters on the case page") == 2  # the huge answer, in each run
