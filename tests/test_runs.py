"""The run-folder read API (evalh_pipeline.runs): a run made by the engine reads back record
for record, with its summary; any other folder is refused in one line."""

from __future__ import annotations

import json

import pytest

from evalh_pipeline import NotARunFolder, RunSummary, UserError, open_run
from evalh_pipeline.runner.stages import write_summary
from tests.support.in_process import run_in_process, toy_spec


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_run_reads_back_its_cases_traces_results_and_summary(tmp_path):
    spec = toy_spec(tmp_path, cases=4)
    run_dir = run_in_process(spec)
    written = write_summary(spec, run_dir)

    run = open_run(run_dir.path)

    assert (run.run_id, run.path, run.meta()["eval_name"]) == (run_dir.run_id, run_dir.path, spec.name)
    assert [c.id for c in run.cases()] == [f"case_{i}" for i in range(4)]
    traces = list(run.traces())
    assert [(t.case_id, t.variant_name) for t in traces] == [(t["case_id"], t["variant_name"]) for t in _lines(run_dir.traces)]
    assert {t.output.final_answer for t in traces if t.case_id == "case_1"} == {"answer 1 Paris"}
    results = list(run.results())
    assert len(results) == len(traces) * 5  # the five evaluators of toy_spec
    assert [(r.case_id, r.evaluator, r.passed) for r in results] == [
        (r["case_id"], r["evaluator"], r["passed"]) for r in _lines(run_dir.results)]
    summary = run.summary()
    assert isinstance(summary, RunSummary) and summary == written


def test_a_run_not_judged_yet_has_no_results_and_no_summary(tmp_path):
    run_dir = run_in_process(toy_spec(tmp_path, cases=2))
    run_dir.results.unlink()

    run = open_run(run_dir.path)

    assert list(run.results()) == [] and len(list(run.traces())) == 4
    with pytest.raises(FileNotFoundError):
        run.summary()


def test_a_folder_that_is_no_run_is_refused_as_a_user_error(tmp_path):
    with pytest.raises(NotARunFolder, match="is not a run folder") as refused:
        open_run(tmp_path)
    assert isinstance(refused.value, UserError) and isinstance(refused.value, FileNotFoundError)
    assert "\n" not in str(refused.value)
