"""A run whose folder is an s3:// URL (moto's S3 server on loopback), finished and read from
another machine: the commands that write it work on a working copy brought up to date with
the URL, and publish back to it."""

from __future__ import annotations

import json
import uuid

import pytest
import yaml

from tests.support.deployment import with_outputs
from tests.support.evalh_process import run_evalh
from tests.support.evals import write_eval
from tests.support.s3_server import machine_env

pytestmark = pytest.mark.integration


machine = machine_env


def verdicts(data: bytes) -> list[tuple[str, str, str, bool]]:
    return sorted((r["case_id"], r["variant_name"], r["evaluator"], r["passed"]) for r in map(json.loads, data.splitlines()))


def trace_cells(fs, run_url: str) -> list[tuple[str, str]]:
    lines = fs.cat(f"{run_url}/traces.jsonl").decode().splitlines()
    return sorted((t["case_id"], t["variant_name"]) for t in map(json.loads, lines))


@pytest.fixture
def s3_run(tmp_path, env, s3_server):
    """An eval whose output is an s3:// URL, run once on machine A; yields (eval path, run URL, fs)."""
    bucket = s3_server.make_bucket(f"evals-{uuid.uuid4().hex[:8]}")
    path = with_outputs(write_eval(tmp_path / "toy", cases=4), f"{bucket}/runs")
    done = run_evalh(["run", str(path)], machine(tmp_path, env, s3_server, "a"), tmp_path)
    assert done.returncode == 0, done.stderr
    fs = s3_server.filesystem()
    [run] = fs.ls(f"{bucket}/runs")
    return path, f"s3://{run}", fs


def test_resume_from_the_url_on_another_machine_runs_only_the_missing_cells(tmp_path, env, s3_server, s3_run):
    path, run_url, fs = s3_run
    complete = trace_cells(fs, run_url)
    # The run as a worker killed mid-stage leaves it: the last two traces never published.
    lines = fs.cat(f"{run_url}/traces.jsonl").decode().splitlines(keepends=True)
    fs.pipe(f"{run_url}/traces.jsonl", "".join(lines[:-2]).encode())
    calls = tmp_path / "calls.log"
    calls.unlink()

    b = machine(tmp_path, env, s3_server, "b")
    done = run_evalh(["run", str(path), "--resume", run_url], b, tmp_path)
    assert done.returncode == 0, done.stderr
    assert len(calls.read_text().splitlines()) == 2  # only the two missing cells called the system
    assert trace_cells(fs, run_url) == complete  # every cell exactly once, in the canonical copy
    assert "summary.yaml" in {p.rsplit("/", 1)[-1] for p in fs.ls(run_url)}


def test_re_evaluate_retry_failed_and_promote_take_the_url_on_another_machine(tmp_path, env, s3_server, s3_run):
    path, run_url, fs = s3_run
    b = machine(tmp_path, env, s3_server, "b")
    before = fs.cat(f"{run_url}/results.jsonl")

    judged = run_evalh(["re-evaluate", run_url, "--all"], b, tmp_path)
    assert judged.returncode == 0, judged.stderr
    after = fs.cat(f"{run_url}/results.jsonl")
    assert after != before and verdicts(after) == verdicts(before)  # judged again (--all) on B, same verdicts

    retried = run_evalh(["retry-failed", run_url], b, tmp_path)
    assert retried.returncode == 0, retried.stderr

    promoted = run_evalh(["promote", run_url], b, tmp_path)
    assert promoted.returncode == 0, promoted.stderr
    run_id = run_url.rsplit("/", 1)[-1]
    assert run_id in promoted.stdout + promoted.stderr

    # A run made on a third machine compares with the baseline promoted on B.
    c = machine(tmp_path, env, s3_server, "c")
    later = run_evalh(["run", str(path)], c, tmp_path)
    assert later.returncode == 0, later.stderr
    fs.invalidate_cache()
    [new_run] = [r for r in fs.ls(run_url.rsplit("/", 1)[0][len("s3://"):]) if r.rsplit("/", 1)[-1] not in (run_id, "baselines")]
    drift = yaml.safe_load(fs.cat(f"s3://{new_run}/drift.yaml"))
    assert drift["baseline_run_id"] == run_id


def test_inspect_compare_and_drift_read_the_url(tmp_path, env, s3_server, s3_run):
    _path, run_url, _fs = s3_run
    b = machine(tmp_path, env, s3_server, "b")
    shown = run_evalh(["inspect", run_url, "--limit", "1"], b, tmp_path)
    assert shown.returncode == 0, shown.stderr
    compared = run_evalh(["compare", run_url, run_url, "--json"], b, tmp_path)
    assert compared.returncode == 0, compared.stderr
    assert all(not d["regressions"] for d in json.loads(compared.stdout)["comparison"]["deltas"])
    drifted = run_evalh(["drift", run_url, "--baseline", run_url], b, tmp_path)
    assert drifted.returncode == 0, drifted.stderr
