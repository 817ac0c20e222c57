"""Judging in shards side by side (runner/evaluation.py ``judge_shard`` then ``evaluate_traces``
with ``judged``): the same bytes one pass over every trace writes, in the same order."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest

from evalh_pipeline.runner.evaluation import evaluate_traces, judge_shard
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.shards import PARTS_FOLDER, all_shards, results_part
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import RunDirectory, new_run_id
from tests.support.evals import write_eval

EVALUATORS = """
  - name: mentions_paris
    type: contains_text
  - name: used_lookup
    type: tool_called
    config: {tool_name: lookup}
"""
CHANGED = EVALUATORS.replace("type: tool_called\n    config: {tool_name: lookup}",
                             "type: tool_called\n    config: {tool_name: search}")


def _judging_times_aside(run_dir: RunDirectory) -> bytes:
    """results.jsonl but for when each result was judged (and how long it took)."""
    data = re.sub(rb'"(started_at|finished_at)":"[^"]*"', rb'"\1":"T"', run_dir.results.read_bytes())
    return re.sub(rb'"latency_ms":\d+', rb'"latency_ms":0', data)


def _twins(tmp_path: Path, cases: int = 11):
    """One run's traces in two copies of its folder: one to judge whole, one in shards."""
    path = write_eval(tmp_path / "toy", cases=cases, evaluators=EVALUATORS)
    spec = load_eval(path)
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    twin = RunDirectory(run_dir.path.with_name(run_dir.path.name + "-twin"))
    shutil.copytree(run_dir.path, twin.path)
    return path, spec, run_dir, twin


def _in_shards(spec, run_dir: RunDirectory, count: int, incremental: bool = True):
    judged = [(shard, asyncio.run(judge_shard(spec, run_dir, None, shard, incremental=incremental)))
              for shard in all_shards(count)]
    return asyncio.run(evaluate_traces(spec, run_dir, incremental=incremental, judged=judged))


@pytest.mark.parametrize("count", [2, 3])
def test_shards_write_what_one_pass_writes(tmp_path, count):
    _, spec, whole, sharded = _twins(tmp_path)
    one = asyncio.run(evaluate_traces(spec, whole))
    many = _in_shards(spec, sharded, count)
    assert _judging_times_aside(sharded) == _judging_times_aside(whole)
    assert (many.traces, many.results, many.by_variant) == (one.traces, one.results, one.by_variant)
    assert (many.traces, many.results) == (22, 44)
    assert not (sharded.path / PARTS_FOLDER).exists()
    assert asyncio.run(evaluate_traces(spec, sharded)).results == 0  # every result is current


def test_shards_rejudge_a_changed_evaluator_and_keep_the_other(tmp_path):
    path, spec, whole, sharded = _twins(tmp_path)
    asyncio.run(evaluate_traces(spec, whole))
    asyncio.run(evaluate_traces(spec, sharded))
    path.write_text(path.read_text().replace(EVALUATORS, CHANGED))
    changed = load_eval(path)
    one = asyncio.run(evaluate_traces(changed, whole))
    many = _in_shards(changed, sharded, 3)
    assert _judging_times_aside(sharded) == _judging_times_aside(whole)
    assert many.evaluators_rejudged == one.evaluators_rejudged == ["used_lookup"]
    assert many.results_kept == one.results_kept == 22
    # --all: every result judged again, in shards as in one pass.
    asyncio.run(evaluate_traces(changed, whole, incremental=False))
    _in_shards(changed, sharded, 2, incremental=False)
    assert _judging_times_aside(sharded) == _judging_times_aside(whole)


def test_a_shard_part_from_other_evaluators_is_refused(tmp_path):
    path, spec, _, run_dir = _twins(tmp_path)
    judged = [(shard, asyncio.run(judge_shard(spec, run_dir, None, shard))) for shard in all_shards(2)]
    path.write_text(path.read_text().replace(EVALUATORS, CHANGED + "  - name: extra\n    type: contains_text\n"))
    with pytest.raises(RuntimeError, match="re-execute the run's results stage"):
        asyncio.run(evaluate_traces(load_eval(path), run_dir, judged=judged))
    assert not run_dir.results.exists()  # nothing half-written
    assert results_part(run_dir, judged[0][0]).is_dir()
