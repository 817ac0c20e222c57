"""The review queue's one write, through a real `evalh view` on loopback: a label POST that
comes from another origin, is marked cross-site or lacks the viewer's token is refused with
403 and writes nothing; the viewer's own form is stored as a label (and nothing else changes)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from evalh_pipeline.store.labels import labels_path
from tests.support.http_server import free_port
from tests.support.judged_run import judged_run
from tests.support.review_page import review_form
from tests.support.viewer_process import running_viewer

pytestmark = pytest.mark.integration


@dataclass
class Served:
    url: str
    runs: Path
    run: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("review_post")
    eval_path, run = judged_run(root / "toy", "first", cases=6)
    runs = eval_path.parent / "runs"
    with running_viewer(runs, free_port(), {**os.environ, "EVALH_RUNS_DIR": str(runs)}, root / "view.log") as url:
        yield Served(url, runs, run.path)


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def _run_files(run: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(run.rglob("*")) if p.is_file()}


def test_a_label_from_another_origin_or_without_the_token_is_refused_and_writes_nothing(served):
    review = f"{served.url}/runs/first/review"
    with httpx.Client(follow_redirects=False, timeout=60) as client:
        form = review_form(client.get(review).text)
        own = {"Origin": served.url, "Sec-Fetch-Site": "same-origin"}
        # One label from the viewer's own page first, so the file exists and must stay as it is.
        stored = client.post(review, data={**form, "passed": "false"}, headers=own)
        assert stored.status_code == 303, stored.text
        labels = labels_path(served.runs, "toy")
        before, run_before = _digest(labels), _run_files(served.run)
        assert before is not None and len(labels.read_text().splitlines()) == 1
        form = review_form(client.get(review).text)
        refused = [
            client.post(review, data={**form, "passed": "true"},
                        headers={"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}),
            client.post(review, data={**form, "passed": "true"}, headers={"Origin": "http://evil.example"}),
            client.post(review, data={**form, "passed": "true"}, headers={"Sec-Fetch-Site": "same-site"}),
            # An opaque origin (a sandboxed frame, a data: URL) without the browser's same-origin mark.
            client.post(review, data={**form, "passed": "true"}, headers={"Origin": "null"}),
            client.post(review, data={**form, "token": "guessed", "passed": "true"}, headers=own),
            client.post(review, data={k: v for k, v in form.items() if k != "token"} | {"passed": "true"}, headers=own),
        ]
    assert [r.status_code for r in refused] == [403] * len(refused), [r.text for r in refused]
    assert all(r.text.startswith("refused: ") for r in refused)
    assert _digest(labels) == before
    assert _run_files(served.run) == run_before  # traces, results and summary untouched by any POST


def test_the_viewers_own_form_stores_one_label_and_reveals_the_judges_verdict(served):
    review = f"{served.url}/runs/first/review"
    labels = labels_path(served.runs, "toy")
    with httpx.Client(follow_redirects=False, timeout=60) as client:
        page = client.get(review).text
        assert "judge-verdict" not in page  # blind: the verdict is not on the page before the answer
        form = review_form(page)
        count = len(labels.read_text().splitlines()) if labels.exists() else 0
        run_before = _run_files(served.run)
        answered = client.post(review, data={**form, "passed": "true"},
                               headers={"Origin": served.url, "Sec-Fetch-Site": "same-origin"})
        assert answered.status_code == 303, answered.text
        after = client.get(f"{served.url}{answered.headers['location']}").text
        run_page = client.get(f"{served.url}/runs/first").text
        variants_page = client.get(f"{served.url}/runs/first/variants?a=base&b=candidate").text
    assert len(labels.read_text().splitlines()) == count + 1
    assert f"Case {form['case_id']}" in after and "you said <strong>pass</strong>" in after
    assert _run_files(served.run) == run_before
    # A label or two calibrate nothing: the run and compare pages say so, and correct nothing.
    for page in (run_page, variants_page):
        assert "Judge calibration (human labels)" in page and "too few labels to correct" in page
        assert "not corrected" in page


def test_a_form_naming_no_judged_cell_or_too_large_stores_nothing(served):
    review = f"{served.url}/runs/first/review"
    labels = labels_path(served.runs, "toy")
    own = {"Origin": served.url, "Sec-Fetch-Site": "same-origin"}
    with httpx.Client(follow_redirects=False, timeout=60) as client:
        form = review_form(client.get(review).text)
        before = _digest(labels)
        answers = [
            client.post(review, data={**form, "case_id": "no_such_case", "passed": "true"}, headers=own),
            client.post(review, data={**form, "content_hash": "0" * 16, "passed": "true"}, headers=own),
            client.post(review, data={**form, "passed": "maybe"}, headers=own),
            client.post(review, data={**form, "passed": "true", "padding": "x" * 100_000}, headers=own),
        ]
    assert [r.status_code for r in answers] == [409, 409, 400, 413], [r.text for r in answers]
    assert "has no verdict of" in answers[0].text and "case 'no_such_case'" in answers[0].text
    assert "since the page was shown" in answers[1].text
    assert _digest(labels) == before
