"""An evaluator_set in a run: judged by the results stage, re-judged alone when a weight
changes, counted by the summary like any evaluator."""

from __future__ import annotations

import asyncio
import json

from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.stages import write_summary
from tests.support.in_process import run_in_process, toy_spec

QUALITY = """
  - name: used_lookup
    type: tool_called
    config: {tool_name: lookup}
  - name: quality
    type: evaluator_set
    config:
      threshold: 0.5
      evaluators:
        - {name: paris, type: contains_text, weight: %s, config: {all_of: [Paris]}}
        - {name: rome, type: contains_text, config: {all_of: [Rome]}}
"""


def _results(run_dir, evaluator):
    return sorted((json.loads(line) for line in run_dir.results.read_text().splitlines()
                   if json.loads(line)["evaluator"] == evaluator), key=lambda r: (r["case_id"], r["variant_name"]))


def test_a_set_passes_on_its_threshold_and_is_rejudged_alone_when_a_weight_changes(tmp_path):
    spec = toy_spec(tmp_path, QUALITY % 1)
    run_dir = run_in_process(spec)
    quality = _results(run_dir, "quality")
    # Every answer misses Rome; those that say Paris score 0.5 >= 0.5 and pass. The candidate
    # answers "wrong" on case_0 and case_3.
    failed = {(r["case_id"], r["variant_name"]) for r in quality if not r["passed"]}
    assert failed == {("case_0", "candidate"), ("case_3", "candidate")}
    assert {r["score"] for r in quality} == {0.5, 0.0}
    assert all([m["name"] for m in r["detail"]["members"]] == ["paris", "rome"] for r in quality)
    lookup = _results(run_dir, "used_lookup")

    reweighed = toy_spec(tmp_path, QUALITY % 3)
    stats = asyncio.run(evaluate_traces(reweighed, run_dir))
    assert stats.evaluators_rejudged == ["quality"] and stats.results == 12 and stats.results_kept == 12
    assert _results(run_dir, "used_lookup") == lookup
    assert {r["score"] for r in _results(run_dir, "quality")} == {0.75, 0.0}

    summary = write_summary(reweighed, run_dir)
    rates = {rollup.evaluator: rollup.by_variant for rollup in summary.by_evaluator}
    assert rates["quality"]["base"].pass_rate == 1.0 and rates["quality"]["candidate"].pass_rate == 4 / 6
    candidate = next(v for v in summary.variants if v.name == "candidate")
    assert candidate.cases_passed == 4
