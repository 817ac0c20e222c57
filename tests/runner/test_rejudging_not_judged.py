"""Issue 39 item 7: a result its judge could not give is never current. The next
evaluation judges exactly those results again from the saved traces (no system call),
and keeps every other result as it is."""

from __future__ import annotations

import asyncio
import json

from tests.support.fake_judge_server import FakeJudgeServer
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.retry import failed_cells, not_judged_results
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval


def _results(run_dir):
    return [json.loads(line) for line in run_dir.results.read_text().splitlines()]


def test_only_the_results_not_judged_are_judged_again_and_then_kept(tmp_path):
    with FakeJudgeServer() as server:
        evaluators = f"""
  - name: quality
    type: llm_judge
    config:
      backend: openai_compatible
      model: judge-1
      base_url: {server.openai_base_url}
      nl_assertions: ['The answer mentions "Paris"']
"""
        spec = load_eval(write_eval(tmp_path / "toy", cases=3, evaluators=evaluators), env={})
        run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
        asyncio.run(produce_traces(spec, run_dir))
        traces = run_dir.traces.read_bytes()
        # One judged result at a time: two answers of HTTP 500 are one result's two attempts.
        server.script("error_500", "error_500", "error_500", "error_500")
        asyncio.run(evaluate_traces(spec, run_dir, max_concurrency=1))
        first = _results(run_dir)
        down = [r for r in first if r["error"] is not None]
        assert [r["error"]["type"] for r in down] == ["judge_unreachable", "judge_unreachable"]
        assert not_judged_results(run_dir) == 2
        # retry-failed keeps their traces: nothing to run again, only to judge.
        assert failed_cells(run_dir, include_evaluator_failures=True) == set()

        calls = server.calls
        asyncio.run(evaluate_traces(spec, run_dir))
        assert server.calls - calls == 2  # exactly the two, not the four others
        second = _results(run_dir)
        assert all(r["error"] is None for r in second) and not_judged_results(run_dir) == 0
        kept = {(r["case_id"], r["variant_name"]): r for r in first if r["error"] is None}
        assert all(r == kept[(r["case_id"], r["variant_name"])] for r in second
                   if (r["case_id"], r["variant_name"]) in kept)  # byte for byte the same results

        calls = server.calls
        asyncio.run(evaluate_traces(spec, run_dir))
        assert server.calls == calls  # all current now
        assert run_dir.traces.read_bytes() == traces
