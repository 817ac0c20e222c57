"""`evalh retry-failed`: failed cells are run again and replaced, never duplicated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalh_pipeline.runner.retry import drop_traces, failed_cells, prepare_retry
from evalh_pipeline.store.run_dir import RunDirectory
from tests.support.evalh_process import run_evalh
from tests.support.evals import write_eval

def _write_jsonl(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _trace(case: str, variant: str, error: bool = False, sample: int = 0) -> dict:
    return {"case_id": case, "variant_name": variant, "sample": sample,
            "error": {"type": "exception", "message": "boom"} if error else None}


def _result(case: str, variant: str, evaluator: str, error: bool = False) -> dict:
    return {"case_id": case, "variant_name": variant, "sample": 0, "evaluator": evaluator, "passed": not error,
            "error": {"type": "evaluator_error", "message": "x"} if error else None}


@pytest.fixture
def run_dir(tmp_path) -> RunDirectory:
    directory = RunDirectory(tmp_path / "run_1")
    directory.path.mkdir()
    _write_jsonl(directory.traces, [_trace("a", "base"), _trace("b", "base", error=True), _trace("a", "cand"),
                                    _trace("b", "cand", sample=1, error=True)])
    _write_jsonl(directory.results, [_result("a", "base", "e1"), _result("a", "cand", "e1", error=True),
                                     _result("gone", "base", "e1", error=True)])
    return directory


def test_failed_cells_are_trace_errors_and_optionally_evaluator_errors(run_dir):
    assert failed_cells(run_dir) == {("b", "base", 0), ("b", "cand", 1)}
    # Only cells that still have a trace: a stale result for a missing trace is not a cell to retry.
    assert failed_cells(run_dir, include_evaluator_failures=True) == {
        ("b", "base", 0), ("b", "cand", 1), ("a", "cand", 0)}


def test_drop_traces_rewrites_the_file_without_those_cells(run_dir):
    with run_dir.traces.open("a") as f:
        f.write('{"case_id": "torn"')  # a torn tail is set aside, not lost with the rewrite

    assert drop_traces(run_dir, {("b", "base", 0)}) == 1

    kept = [(t["case_id"], t["variant_name"]) for t in map(json.loads, run_dir.traces.read_text().splitlines())]
    assert kept == [("a", "base"), ("a", "cand"), ("b", "cand")]
    assert (run_dir.path / "traces.jsonl.torn").read_text() == '{"case_id": "torn"\n'
    assert not list(run_dir.path.glob(".traces.retry.*"))


def test_prepare_retry_counts_cells(run_dir):
    assert prepare_retry(run_dir, include_evaluator_failures=True) == 3
    assert [t["case_id"] for t in map(json.loads, run_dir.traces.read_text().splitlines())] == ["a"]
    assert prepare_retry(run_dir) == 0


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_retry_failed_reruns_only_errored_cells_and_replaces_them(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=4)
    cases_file = tmp_path / "toy" / "cases.jsonl"
    cases = _lines(cases_file)
    cases[1]["input"]["explode"] = ["candidate"]
    cases[3]["input"]["explode"] = ["base", "candidate"]
    _write_jsonl(cases_file, cases)

    assert (first := run_evalh(["run", str(path)], env, tmp_path)).returncode == 0, first.stderr
    run_dir = next(p for p in (tmp_path / "toy" / "runs").iterdir() if not p.name.startswith("."))
    failed = {("case_1", "candidate"), ("case_3", "base"), ("case_3", "candidate")}
    before = {(t["case_id"], t["variant_name"]): t for t in _lines(run_dir / "traces.jsonl")}
    assert {k for k, t in before.items() if t["error"]} == failed
    log = Path(env["EVALH_TEST_CALL_LOG"])
    log.unlink()

    # "Fix" the system: the stub no longer raises.
    stub = tmp_path / "toy" / "stub_agent.py"
    stub.write_text(stub.read_text().replace('raise RuntimeError("boom")', 'pass'))
    proc = run_evalh(["retry-failed", str(run_dir)], env, tmp_path)

    assert proc.returncode == 0, proc.stderr
    assert "retried 3 cells" in proc.stdout
    after = _lines(run_dir / "traces.jsonl")
    keys = [(t["case_id"], t["variant_name"]) for t in after]
    assert len(keys) == len(set(keys)) == 8
    by_key = {(t["case_id"], t["variant_name"]): t for t in after}
    assert not any(t["error"] for t in after)
    for key, trace in before.items():
        if key not in failed:
            assert by_key[key] == trace  # untouched
    assert {tuple(json.loads(line)) for line in log.read_text().splitlines()} == failed
    results = _lines(run_dir / "results.jsonl")
    assert len(results) == 8 * 2
    assert len({(r["case_id"], r["variant_name"], r["evaluator"]) for r in results}) == 16
    # The retried cells are judged on their new traces (the stub's tool call is there now).
    assert all(r["passed"] for r in results if (r["case_id"], r["variant_name"]) in failed
               and r["evaluator"] == "used_lookup")
    summary = (run_dir / "summary.yaml").read_text()
    assert "cases_errored: 1" not in summary and "cases_errored: 0" in summary

    # Nothing failed any more: a second retry runs nothing.
    log.unlink()
    again = run_evalh(["retry-failed", str(run_dir)], env, tmp_path)
    assert again.returncode == 0, again.stderr
    assert "retried 0 cells" in again.stdout
    assert not log.exists()
    assert _lines(run_dir / "traces.jsonl") == after


def test_retry_failed_on_a_folder_that_is_not_a_run_exits_2(tmp_path, env):
    (tmp_path / "nope").mkdir()
    proc = run_evalh(["retry-failed", str(tmp_path / "nope")], env, tmp_path)
    assert proc.returncode == 2
