"""Judge self-consistency (runner/judge_consistency.py): every answered trace judged K times
by each judge, against the bundled judge server on loopback; deterministic evaluators are
skipped, a repeat the judge could not answer leaves its cell out of the rate."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.support.fake_judge_server import FakeJudgeServer
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.judge_consistency import DETERMINISTIC, measure_judge_consistency
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import STEADY_SYSTEMS, write_eval


def _judge_config(server: FakeJudgeServer) -> dict:
    return {"backend": "openai_compatible", "model": "judge-1", "base_url": server.openai_base_url, "cache": True,
            "nl_assertions": ['The answer mentions "Paris"']}


def _edit_cases(path, edit) -> None:
    dataset = path.parent / "cases.jsonl"
    rows = [json.loads(line) for line in dataset.read_text().splitlines()]
    for row in rows:
        edit(row)
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _judged_run(spec):
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir, max_concurrency=1))
    return run_dir


def test_a_repeat_the_judge_could_not_answer_leaves_its_cell_out_and_failed_calls_are_not_judged(tmp_path):
    with FakeJudgeServer() as server:
        evaluators = f"""
  - name: quality
    type: llm_judge
    config: {json.dumps(_judge_config(server))}
  - name: mentions_paris
    type: contains_text
"""
        path = write_eval(tmp_path / "toy", cases=3, systems=STEADY_SYSTEMS, evaluators=evaluators)
        # The candidate's system fails on case_1: no answer to judge.
        _edit_cases(path, lambda row: row["input"].update(explode=["candidate"]) if row["id"] == "case_1" else None)
        spec = load_eval(path, env={})
        run_dir = _judged_run(spec)
        results = run_dir.results.read_bytes()
        calls = server.calls
        # The first repeat's call and its retry answer HTTP 500: that repeat gives no verdict.
        server.script("error_500", "error_500")
        quality, mentions = asyncio.run(measure_judge_consistency(spec, run_dir, 2, max_concurrency=1))
        assert server.calls - calls == 5 * 2 + 1  # 5 answered cells, twice each, one retry; no cache hit
    assert (quality.evaluator, quality.repeats, quality.cells, quality.errored, quality.flips) == ("quality", 2, 4, 1, 0)
    assert (quality.flip_rate, quality.ci_low) == (0.0, 0.0) and quality.flipping == [] and quality.skipped is None
    assert (mentions.skipped, mentions.cells) == (DETERMINISTIC, 0)
    assert [json.loads(line)["evaluator"] for line in run_dir.judge_consistency.read_text().splitlines()] == [
        "quality", "mentions_paris"]
    assert run_dir.results.read_bytes() == results


def test_a_case_evaluator_that_calls_a_judge_is_measured_on_its_cases(tmp_path):
    with FakeJudgeServer() as server:
        path = write_eval(tmp_path / "toy", cases=3, systems=STEADY_SYSTEMS)
        own = [{"name": "own_judge", "type": "llm_judge", "config": _judge_config(server)}]
        _edit_cases(path, lambda row: row.update(evaluators=own) if row["id"] == "case_0" else None)
        spec = load_eval(path, env={})
        run_dir = _judged_run(spec)
        calls = server.calls
        measured = {line.evaluator: line for line in asyncio.run(measure_judge_consistency(spec, run_dir, 3))}
        assert server.calls - calls == 2 * 3  # case_0 in both variants, three times
    assert (measured["own_judge"].cells, measured["own_judge"].flips, measured["own_judge"].skipped) == (2, 0, None)
    assert measured["mentions_paris"].skipped == measured["used_lookup"].skipped == DETERMINISTIC


def test_fewer_than_two_repeats_are_refused_before_anything_is_judged(tmp_path):
    spec = load_eval(write_eval(tmp_path / "toy", cases=1), env={})
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
    with pytest.raises(ValueError, match="K >= 2"):
        asyncio.run(measure_judge_consistency(spec, run_dir, 1))
    assert not run_dir.judge_consistency.exists()
