"""A toy eval run in this process through the runner's stages (no `evalh` process, no Dagster)."""

from __future__ import annotations

import asyncio

from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval

# Five evaluators of different types, for tests that change one and re-judge.
FIVE_EVALUATORS = """
  - name: mentions_paris
    type: contains_text
  - name: used_lookup
    type: tool_called
    config: {tool_name: lookup}
  - name: says_answer
    type: regex_match
    config: {pattern: "answer"}
  - name: fast
    type: latency_under
    config: {max_ms: 60000}
  - name: case_sensitive_paris
    type: contains_text
    config: {case_sensitive: true}
"""


def toy_spec(tmp_path, evaluators=FIVE_EVALUATORS, cases=6):
    """The loaded spec of a toy eval (tests.support.evals) in ``tmp_path/toy``."""
    return load_eval(write_eval(tmp_path / "toy", cases=cases, evaluators=evaluators))


def run_in_process(spec):
    """A new run of ``spec``: cases, traces and results made in this process; its RunDirectory."""
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))  # the results stage judges every trace
    return info.run_dir
