"""The engine runs an eval end to end without Dagster."""

import asyncio

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id


def test_engine_runs_eval_end_to_end(toy_eval):
    spec = load_eval(toy_eval)
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    summary = write_summary(spec, info.run_dir)
    rates = {v.name: v.pass_rate for v in summary.variants}
    assert rates == {"base": 1.0, "candidate": 4 / 6}
    assert summary.comparison.deltas[0].regressions == ["case_0", "case_3"]
