"""The evaluation loop: isolation of evaluator failures, whole-slice replacement."""

from __future__ import annotations

import asyncio
import json

import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.evaluators.base import Evaluator, Verdict
from evalh_pipeline.evaluators.registry import EVALUATORS
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.stages import prepare_cases
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.jsonl import iter_raw_lines
from evalh_pipeline.store.records import TRACES
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval


class Exploding(Evaluator):
    async def evaluate(self, case, trace, artifact):
        if case.id == "case_1":
            raise KeyError("no such field")
        return Verdict(True, "fine")




@pytest.fixture(autouse=True)
def _exploding(registered):
    registered(EVALUATORS, "exploding", Exploding)


EVALS = """
  - name: explodes_on_case_1
    type: exploding
  - name: mentions_paris
    type: contains_text
"""


def _prepared(tmp_path, evaluators=EVALS):
    spec = load_eval(write_eval(tmp_path / "toy", cases=3, evaluators=evaluators))
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    return spec, info.run_dir


def _results(run_dir):
    return [json.loads(line) for line in run_dir.results.read_text().splitlines()]


def test_an_evaluator_that_raises_fails_only_its_own_result(tmp_path):
    spec, run_dir = _prepared(tmp_path)
    stats = asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    assert stats.evaluator_errors == 2  # case_1 on both variants
    results = {(r["case_id"], r["variant_name"], r["evaluator"]): r for r in _results(run_dir)}
    broken = results[("case_1", "base", "explodes_on_case_1")]
    assert broken["passed"] is False and broken["error"]["type"] == "exception"
    assert "KeyError" in broken["reason"]
    assert results[("case_1", "base", "mentions_paris")]["passed"] is True
    assert len(results) == 3 * 2 * 2


def test_reevaluating_one_variant_replaces_only_that_slice(tmp_path):
    spec, run_dir = _prepared(tmp_path)
    asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    before = {(r["case_id"], r["variant_name"], r["evaluator"]): r["finished_at"] for r in _results(run_dir)}
    asyncio.run(evaluate_traces(spec, run_dir, ["candidate"], incremental=False))
    after = {(r["case_id"], r["variant_name"], r["evaluator"]): r["finished_at"] for r in _results(run_dir)}
    assert before.keys() == after.keys()
    assert all(after[k] == before[k] for k in after if k[1] == "base")
    assert all(after[k] != before[k] for k in after if k[1] == "candidate")


def test_cost_limited_cells_are_not_judged(tmp_path):
    spec, run_dir = _prepared(tmp_path)
    lines = run_dir.traces.read_text().splitlines()
    first = json.loads(lines[0])
    first["error"] = {"type": "cost_limit", "message": "limit reached"}
    run_dir.traces.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    judged = {(r["case_id"], r["variant_name"]) for r in _results(run_dir)}
    assert (first["case_id"], first["variant_name"]) not in judged
    assert len(judged) == 5


def test_a_fresh_run_is_judged_by_the_results_stage_only(tmp_path):
    spec, run_dir = _prepared(tmp_path)
    # The traces stage judges nothing and stages nothing: no results, no hidden folder.
    assert not run_dir.results.exists() and not run_dir.results_store.exists()
    assert not [p.name for p in run_dir.path.iterdir() if p.is_dir() and p.name.startswith(".")]
    stats = asyncio.run(evaluate_traces(spec, run_dir))
    assert stats.results == 12 and stats.results_kept == 0 and stats.evaluator_errors == 2
    assert stats.by_variant["base"]["explodes_on_case_1"] == [2, 3]
    results = _results(run_dir)
    assert len(results) == 12 and sum(r["error"] is not None for r in results) == 2


def test_an_evaluator_no_longer_configured_loses_its_results(tmp_path):
    from dataclasses import replace

    spec, run_dir = _prepared(tmp_path)
    changed = replace(spec, raw={**spec.raw, "evaluators": spec.raw["evaluators"][:1]})
    changed = replace(changed, config=changed.config.model_copy(update={"evaluators": spec.config.evaluators[:1]}))
    asyncio.run(evaluate_traces(spec, run_dir))
    asyncio.run(evaluate_traces(changed, run_dir))
    assert {r["evaluator"] for r in _results(run_dir)} == {"explodes_on_case_1"}


def test_judging_leaves_no_temporary_files(tmp_path):
    spec, run_dir = _prepared(tmp_path)
    asyncio.run(evaluate_traces(spec, run_dir, incremental=False))
    # .lock and the last evaluation's counts are kept on purpose.
    kept = {".lock", ".evaluation.json"}
    assert not [p.name for p in run_dir.path.iterdir() if p.name.startswith(".") and p.name not in kept]


def test_a_resume_reads_the_seals_of_the_lines_it_wrote_and_hashes_the_lines_it_found(tmp_path):
    spec = load_eval(write_eval(tmp_path / "toy", cases=3))
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    lines = run_dir.traces.read_bytes().splitlines(keepends=True)
    # A killed run left 4 traces; one of them was edited by hand since (its seal is stale).
    edited = lines[0].replace(b"Paris", b"Lyon")
    run_dir.traces.write_bytes(edited + b"\n" + b"".join(lines[1:4]))  # a blank line: counted as lines are
    stats = asyncio.run(produce_traces(spec, run_dir))
    assert stats.cells_run == 2 and stats.traces_sealed_after == 5
    asyncio.run(evaluate_traces(spec, run_dir, traces_digest=stats.traces_digest,
                                traces_sealed_after=stats.traces_sealed_after))
    hashes = {TRACES.content_hash(line) for _, line in iter_raw_lines(run_dir.traces)}
    assert TRACES.trailing(edited, "trace_hash")[0] not in hashes  # the stale seal is nobody's hash
    assert {r["trace_hash"] for r in _results(run_dir)} == hashes  # each trace judged as it reads now
