"""With run.samples_per_case > 1 the summary counts cases, and reports the samples separately."""

from __future__ import annotations

import asyncio

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.queries.compare import compare_runs
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval

# case_1's first sample on each variant answers wrong; every other sample is right.
AGENT = '''
calls = {}

def run(case, variant):
    key = (case["id"], variant["name"])
    calls[key] = calls.get(key, 0) + 1
    wrong = case["id"] == "case_1" and calls[key] == 1
    return {"final_answer": "wrong" if wrong else case["input"]["answer"],
            "tool_calls": [{"name": "lookup", "arguments": {}}]}
'''


def test_cases_are_counted_once_and_samples_separately(tmp_path, monkeypatch):
    systems = """
  - name: base
    adapter: python_function
    target: sampled_agent:run
  - name: candidate
    adapter: python_function
    target: sampled_agent:run
"""
    path = write_eval(tmp_path / "toy", cases=4, systems=systems)
    (tmp_path / "toy" / "sampled_agent.py").write_text(AGENT)
    path.write_text(path.read_text().replace("max_concurrency: 4", "max_concurrency: 1\n  samples_per_case: 3"))
    monkeypatch.syspath_prepend(str(tmp_path / "toy"))
    spec = load_eval(path)
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    summary = write_summary(spec, info.run_dir)

    for variant in summary.variants:
        assert (variant.cases_total, variant.cases_passed, variant.cases_errored) == (4, 3, 0)
        assert variant.pass_rate == 0.75
        assert (variant.samples_total, variant.samples_passed, variant.samples_errored) == (12, 11, 0)
    report = compare_runs(info.run_dir, info.run_dir)
    assert report.variants[0].a.cases_total == 4 and report.variants[0].a.samples_total == 12


def test_one_sample_per_case_reports_no_sample_figures(tmp_path):
    spec = load_eval(write_eval(tmp_path / "toy", cases=3))
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    summary = write_summary(spec, info.run_dir)
    assert all(v.cases_total == 3 and v.samples_total is None for v in summary.variants)
