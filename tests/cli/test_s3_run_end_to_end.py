"""Every command on a run whose folder is an s3:// URL, end to end: a real moto S3 server on
loopback, the real `evalh` as a process, each "machine" its own working directory, cache and
Dagster home (tests/support/s3_server.py ``machine_env``), sharing nothing but the bucket.

One eval publishes to ``s3://<bucket>/runs``; on that URL: inspect, retry-failed, compare,
drift without --baseline (from the pointer promote put there), promote, re-evaluate, --resume
of a killed run, and `evalh view` serving the runs (pages fetched over loopback HTTP), which
writes nothing to the bucket but a label. An s3:// URL without credentials is one line."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
import yaml

from tests.support.deployment import with_outputs
from tests.support.evalh_process import EVALH, run_evalh
from tests.support.evals import STEADY_SYSTEMS, write_eval
from tests.support.http_server import free_port
from tests.support.killed_run import kill_evalh_when
from tests.support.review_page import review_form
from tests.support.s3_server import machine_env
from tests.support.viewer_process import running_viewer

pytestmark = pytest.mark.integration

CASES = 4


@pytest.fixture
def bucket(s3_server) -> str:
    return s3_server.make_bucket(f"evals-{uuid.uuid4().hex[:8]}")


def published_runs(fs, bucket: str) -> list[str]:
    """The run URLs under ``<bucket>/runs``, oldest first (run ids start with their time)."""
    fs.invalidate_cache()
    return sorted(f"s3://{p}" for p in fs.ls(f"{bucket}/runs") if p.rsplit("/", 1)[-1] not in ("baselines", "labels"))


def new_run(fs, bucket: str, before: list[str]) -> str:
    [url] = [u for u in published_runs(fs, bucket) if u not in before]
    return url


def traces(fs, run_url: str) -> list[dict]:
    fs.invalidate_cache()
    return [json.loads(line) for line in fs.cat(f"{run_url}/traces.jsonl").decode().splitlines()]


def verdicts(fs, run_url: str) -> list[tuple[str, str, str, bool]]:
    lines = fs.cat(f"{run_url}/results.jsonl").decode().splitlines()
    return sorted((r["case_id"], r["variant_name"], r["evaluator"], r["passed"]) for r in map(json.loads, lines))


def bucket_objects(fs, bucket: str) -> dict[str, str]:
    """Every object of the bucket and its ETag: what a reader must leave as it is."""
    fs.invalidate_cache()
    return {path: info["ETag"] for path, info in fs.find(bucket, detail=True).items()}


def id_of(run_url: str) -> str:
    return run_url.rsplit("/", 1)[-1]


def ok(done) -> str:
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_every_command_works_on_a_run_whose_folder_is_an_s3_url(tmp_path, env, s3_server, bucket):
    path = with_outputs(write_eval(tmp_path / "toy", cases=CASES), f"{bucket}/runs")
    fs = s3_server.filesystem()
    a, b, c = (machine_env(tmp_path, env, s3_server, name) for name in "abc")

    # Machine A: its system is down for case_1, so two cells error.
    first = ok(run_evalh(["run", str(path)], {**a, "EVALH_TEST_FAIL_CASE": "case_1"}, tmp_path))
    run1 = new_run(fs, bucket, [])
    assert f"published to: {run1}" in first
    assert f"evalh promote {run1}" in first  # the hint names the URL, not A's working copy
    assert sorted((t["case_id"], bool(t.get("error"))) for t in traces(fs, run1)).count(("case_1", True)) == 2

    # Machine B reads it: inspect shows the failed cells, with the system's error.
    shown = ok(run_evalh(["inspect", run1, "--failed", "--limit", "0"], b, tmp_path))
    assert "case_1" in shown and "down on this machine" in shown

    # B retries the failed cells (its system answers) and publishes them back to the URL.
    retried = ok(run_evalh(["retry-failed", run1], b, tmp_path))
    assert "retrying 2 failed cells" in retried
    after = traces(fs, run1)
    assert len(after) == CASES * 2 and not any(t.get("error") for t in after)
    assert len({(t["case_id"], t["variant_name"]) for t in after}) == CASES * 2  # each cell once

    # A second run on A; B compares the two URLs.
    ok(run_evalh(["run", str(path)], a, tmp_path))
    run2 = new_run(fs, bucket, [run1])
    compared = run_evalh(["compare", run1, run2, "--json"], b, tmp_path)
    ok(compared)
    assert (json.loads(compared.stdout)["run_a"], json.loads(compared.stdout)["run_b"]) == (id_of(run1), id_of(run2))

    # Drift without --baseline before anything is promoted: one line, naming the URL.
    refused = run_evalh(["drift", run2], c, tmp_path)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.strip().count("\n") == 0 and f"{bucket}/runs" in refused.stderr
    assert "no promoted baseline" in refused.stderr

    # B promotes run 1: the pointer goes to <url>/baselines/<eval>/.
    promoted = ok(run_evalh(["promote", run1], b, tmp_path))
    assert id_of(run1) in promoted
    pointer = json.loads(fs.cat(f"{bucket}/runs/baselines/toy/current.json"))
    assert pointer["run_id"] == id_of(run1)

    # C, which never saw either run, drifts run 2 against that pointer (no --baseline).
    drifted = run_evalh(["drift", run2, "--json"], c, tmp_path)
    ok(drifted)
    assert (json.loads(drifted.stdout)["run_a"], json.loads(drifted.stdout)["run_b"]) == (id_of(run1), id_of(run2))

    # C re-judges run 2 (--all): new results at the URL, the same verdicts, no system call.
    before = fs.cat(f"{run2}/results.jsonl")
    calls = tmp_path / "calls.log"
    called = len(calls.read_text().splitlines())
    ok(run_evalh(["re-evaluate", run2, "--all"], c, tmp_path))
    fs.invalidate_cache()
    assert fs.cat(f"{run2}/results.jsonl") != before
    assert verdicts(fs, run2) == sorted((r["case_id"], r["variant_name"], r["evaluator"], r["passed"])
                                        for r in map(json.loads, before.decode().splitlines()))
    assert len(calls.read_text().splitlines()) == called


def test_a_killed_run_published_to_s3_is_finished_with_resume_on_another_machine(tmp_path, env, s3_server, bucket):
    held = STEADY_SYSTEMS.replace("target: stub_agent:run\n", "target: stub_agent:run\n    hold_from: 2\n")
    path = with_outputs(write_eval(tmp_path / "toy", cases=CASES, systems=held), f"{bucket}/runs")
    fs = s3_server.filesystem()
    a, b = machine_env(tmp_path, env, s3_server, "a"), machine_env(tmp_path, env, s3_server, "b")
    calls = tmp_path / "calls.log"
    gate = tmp_path / "gate"  # never made on A: its run holds cases 2 and 3 until it is killed

    def answered_the_first_cases() -> bool:
        return calls.exists() and len(calls.read_text().splitlines()) >= 4

    kill_evalh_when([*EVALH, "run", str(path)], {**a, "EVALH_TEST_GATE": str(gate)}, tmp_path, tmp_path / "a.log",
                    answered_the_first_cases, what="the first cells answered")
    run = new_run(fs, bucket, [])
    fs.invalidate_cache()
    assert fs.exists(f"{run}/run.json") and not fs.exists(f"{run}/summary.yaml")  # started, never finished
    done_at_kill = len(traces(fs, run)) if fs.exists(f"{run}/traces.jsonl") else 0
    calls.unlink()

    resumed = ok(run_evalh(["run", str(path), "--resume", run], b, tmp_path))
    assert f"published to: {run}" in resumed
    cells = [(t["case_id"], t["variant_name"]) for t in traces(fs, run)]
    assert sorted(cells) == sorted({(f"case_{i}", v) for i in range(CASES) for v in ("base", "candidate")})
    assert len(calls.read_text().splitlines()) == CASES * 2 - done_at_kill  # only what the URL lacked
    fs.invalidate_cache()
    assert yaml.safe_load(fs.cat(f"{run}/summary.yaml"))["run_id"] == id_of(run)


def test_evalh_view_serves_an_s3_runs_folder_published_by_another_machine(tmp_path, env, s3_server, bucket):
    path = with_outputs(write_eval(tmp_path / "toy", cases=CASES), f"{bucket}/runs")
    fs = s3_server.filesystem()
    a, c = machine_env(tmp_path, env, s3_server, "a"), machine_env(tmp_path, env, s3_server, "c")
    ok(run_evalh(["run", str(path)], a, tmp_path))
    run1 = new_run(fs, bucket, [])
    run1_id = id_of(run1)
    stored = bucket_objects(fs, bucket)
    viewing = tmp_path / "c" / "work"
    viewing.mkdir()

    with running_viewer(f"{bucket}/runs", free_port(), c, tmp_path / "view.log", cwd=viewing) as url, \
            httpx.Client(follow_redirects=False, timeout=60) as client:
        listing = client.get(f"{url}/")
        assert listing.status_code == 200 and run1_id in listing.text
        page = client.get(f"{url}/runs/{run1_id}")
        assert page.status_code == 200, page.text
        assert all(f"case_{i}" in page.text for i in range(CASES))
        case = client.get(f"{url}/runs/{run1_id}/cases/case_0")
        assert case.status_code == 200 and "answer 0 Paris" in case.text
        assert bucket_objects(fs, bucket) == stored  # reading wrote nothing there

        # A run published by A while the viewer runs shows on the next look.
        ok(run_evalh(["run", str(path)], a, tmp_path))
        run2_id = id_of(new_run(fs, bucket, [run1]))
        assert run2_id in client.get(f"{url}/").text
        compared = client.get(f"{url}/compare/{run1_id}/{run2_id}")
        assert compared.status_code == 200 and run2_id in compared.text
        stored = bucket_objects(fs, bucket)

        # A label from the review queue goes to the label file at the URL, and nothing else there changes.
        review = f"{url}/runs/{run1_id}/review"
        form = review_form(client.get(review).text)
        answered = client.post(review, data={**form, "passed": "false"},
                               headers={"Origin": url, "Sec-Fetch-Site": "same-origin"})
        assert answered.status_code == 303, answered.text
    labels_key = f"{bucket}/runs/labels/toy/labels.jsonl"[len("s3://"):]
    changed = {k for k, etag in bucket_objects(fs, bucket).items() if stored.get(k) != etag}
    assert changed == {labels_key}
    [label] = [json.loads(line) for line in fs.cat(labels_key).decode().splitlines()]
    assert (label["case_id"], label["passed"]) == (form["case_id"], False)
    assert not (viewing / "runs").exists()  # nothing made in the working directory either

    # The label counts in the judge calibration of the next run's summary, made on A.
    ok(run_evalh(["run", str(path)], a, tmp_path))
    run3 = new_run(fs, bucket, published_runs(fs, bucket)[:2])
    summary = yaml.safe_load(fs.cat(f"{run3}/summary.yaml"))
    calibrated = {r["evaluator"]: (r.get("calibration") or {}).get("labels") for r in summary["by_evaluator"]}
    assert calibrated[form["evaluator"]] == 1, calibrated


SECRET = "only-half-of-a-key-9f3c1e"


# No credentials anywhere botocore looks, or half of them (a secret without its key id, which
# must not show either): the same published run, every command, both ways.
MISSING_CREDENTIALS = {"none": {}, "secret-without-key-id": {"AWS_SECRET_ACCESS_KEY": SECRET}}


def test_an_s3_url_without_credentials_is_one_line_and_writes_nothing(tmp_path, env, s3_server, bucket):
    path = with_outputs(write_eval(tmp_path / "toy", cases=2), f"{bucket}/runs")
    fs = s3_server.filesystem()
    ok(run_evalh(["run", str(path)], machine_env(tmp_path, env, s3_server, "a"), tmp_path))
    [run] = published_runs(fs, bucket)
    stored = bucket_objects(fs, bucket)
    for name, credentials in MISSING_CREDENTIALS.items():
        # The endpoint stays the loopback server.
        machine = f"nocreds-{name}"
        cache = tmp_path / machine / "cache"
        bare = {k: v for k, v in machine_env(tmp_path, env, s3_server, machine).items()
                if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE")}
        bare |= {"AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"), "AWS_CONFIG_FILE": str(tmp_path / "none"),
                 "HOME": str(tmp_path / machine), **credentials}
        for args in (["view", f"{bucket}/runs", "--port", str(free_port())], ["view", run], ["inspect", run],
                     ["drift", run], ["compare", run, run], ["re-evaluate", run], ["retry-failed", run],
                     ["promote", run], ["run", str(path), "--resume", run], ["run", str(path), "--reuse", run],
                     ["delete-run", run, "--yes"], ["prune", str(path), "--keep", "0", "--yes"]):
            done = run_evalh(args, bare, tmp_path)
            assert done.returncode == 2, (name, args, done.stdout, done.stderr)
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: "), (name, args, done.stderr)
            assert "Traceback" not in done.stderr and "AWS_ACCESS_KEY_ID" in lines[0], (name, args, done.stderr)
            assert SECRET not in done.stdout + done.stderr
        assert bucket_objects(fs, bucket) == stored, name
        made = [p for p in cache.rglob("*")] if cache.exists() else []
        assert not [p for p in made if p.is_file()], (name, made)


def test_a_new_run_on_another_machine_reuses_the_traces_of_a_run_at_the_url(tmp_path, env, s3_server, bucket):
    path = with_outputs(write_eval(tmp_path / "toy", cases=CASES), f"{bucket}/runs")
    fs = s3_server.filesystem()
    a, b = machine_env(tmp_path, env, s3_server, "a"), machine_env(tmp_path, env, s3_server, "b")
    ok(run_evalh(["run", str(path)], a, tmp_path))
    first = new_run(fs, bucket, [])
    calls = tmp_path / "calls.log"
    calls.unlink()

    reused = ok(run_evalh(["run", str(path), "--reuse", first], b, tmp_path))
    assert f"reused {CASES * 2} of {CASES * 2} cell(s) from {id_of(first)}" in reused
    assert not calls.exists()  # no cell called the system on B
    second = new_run(fs, bucket, [first])
    assert sorted((t["case_id"], t["variant_name"]) for t in traces(fs, second)) == \
        sorted((t["case_id"], t["variant_name"]) for t in traces(fs, first))


def test_evalh_view_of_one_runs_url_serves_that_run(tmp_path, env, s3_server, bucket):
    path = with_outputs(write_eval(tmp_path / "toy", cases=2), f"{bucket}/runs")
    fs = s3_server.filesystem()
    a, c = machine_env(tmp_path, env, s3_server, "a"), machine_env(tmp_path, env, s3_server, "c")
    ok(run_evalh(["run", str(path)], a, tmp_path))
    first = new_run(fs, bucket, [])
    ok(run_evalh(["run", str(path)], a, tmp_path))
    second = new_run(fs, bucket, [first])
    log = tmp_path / "view.log"
    with running_viewer(second, free_port(), c, log, cwd=tmp_path) as url, httpx.Client(timeout=60) as client:
        assert f"{url}/runs/{id_of(second)}" in log.read_text()  # the page it prints is the run's
        listing = client.get(f"{url}/").text
        assert id_of(second) in listing and id_of(first) not in listing
        assert client.get(f"{url}/runs/{id_of(second)}").status_code == 200
        assert client.get(f"{url}/runs/{id_of(first)}").status_code == 404


def test_delete_run_and_prune_remove_runs_at_the_url_and_never_the_promoted_baseline(tmp_path, env, s3_server,
                                                                                      bucket):
    path = with_outputs(write_eval(tmp_path / "toy", cases=2), f"{bucket}/runs")
    fs = s3_server.filesystem()
    a, b = machine_env(tmp_path, env, s3_server, "a"), machine_env(tmp_path, env, s3_server, "b")
    ok(run_evalh(["run", str(path)], a, tmp_path))
    kept = new_run(fs, bucket, [])
    ok(run_evalh(["run", str(path)], a, tmp_path))
    doomed = new_run(fs, bucket, [kept])
    ok(run_evalh(["promote", kept], b, tmp_path))
    ok(run_evalh(["retry-failed", doomed], b, tmp_path))  # B now holds a working copy of it

    refused = run_evalh(["delete-run", kept, "--yes"], b, tmp_path)
    assert refused.returncode == 1 and "promoted baseline" in refused.stderr, refused.stderr
    deleted = ok(run_evalh(["delete-run", doomed, "--yes"], b, tmp_path))
    assert f"deleted {doomed}" in deleted
    assert published_runs(fs, bucket) == [kept]
    assert not list((tmp_path / "b" / "cache").rglob(id_of(doomed)))  # nor any copy of it on B

    # prune on B: the newest run and the baseline stay, at the URL.
    for _ in range(2):
        ok(run_evalh(["run", str(path)], a, tmp_path))
    older, newest = [u for u in published_runs(fs, bucket) if u != kept]
    pruned = ok(run_evalh(["prune", str(path), "--keep", "1", "--yes"], b, tmp_path))
    assert f"deleted {older}" in pruned and f"kept 1 and the baseline {id_of(kept)}" in pruned
    assert published_runs(fs, bucket) == sorted([kept, newest])
