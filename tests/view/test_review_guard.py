"""Who may label: a client off this machine is refused (403, nothing written) unless the viewer
accepts remote labels; then its own form still needs the token, and the label is by the
viewer's ``labeller``."""

from __future__ import annotations

from starlette.testclient import TestClient

from evalh_pipeline.store.labels import labels_path, read_labels
from evalh_pipeline.view.app import create_app
from tests.support.judged_run import judged_run
from tests.support.review_page import review_form

BASE = "http://127.0.0.1:8790"


def test_a_client_elsewhere_is_refused_unless_remote_labels_are_accepted(tmp_path):
    _, run = judged_run(tmp_path / "toy", "first", cases=3)
    runs = run.path.parent
    own = {"Origin": BASE, "Sec-Fetch-Site": "same-origin"}
    # Starlette's test client connects as "testclient": not a loopback address.
    closed = TestClient(create_app(runs), base_url=BASE, follow_redirects=False)
    form = review_form(closed.get("/runs/first/review").text)
    refused = closed.post("/runs/first/review", data={**form, "passed": "true"}, headers=own)
    assert refused.status_code == 403 and "from this machine only" in refused.text
    assert not labels_path(runs, "toy").exists()

    opened = TestClient(create_app(runs, labeller="ana", remote_labels=True), base_url=BASE, follow_redirects=False)
    form = review_form(opened.get("/runs/first/review").text)
    assert opened.post("/runs/first/review", data={**form, "token": "x", "passed": "true"},
                       headers=own).status_code == 403
    assert not labels_path(runs, "toy").exists()
    stored = opened.post("/runs/first/review", data={**form, "passed": "true"}, headers=own)
    assert stored.status_code == 303, stored.text
    (label,) = read_labels(runs, "toy").values()
    assert (label.labeller, label.case_id, label.passed, label.run_id) == ("ana", form["case_id"], True, "first")
