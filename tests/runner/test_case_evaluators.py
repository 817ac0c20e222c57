"""A case's own evaluators (``evaluators:`` on a dataset row): judged on that case only,
merged with the eval's, required for that case's pass, and re-judged per case when edited."""

from __future__ import annotations

import asyncio
import json

from evalh_pipeline.queries.cells import run_pass_criteria
from evalh_pipeline.queries.inspect import inspect_run
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import STEADY_SYSTEMS, write_eval


def _own(pattern: str, name: str = "says_number") -> list[dict]:
    return [{"name": name, "type": "regex_match", "config": {"pattern": pattern}}]


def _eval(tmp_path, own: dict[int, list[dict]], extra_yaml: str = ""):
    """The toy eval (every answer is ``answer <i> Paris``) with ``own`` evaluators on some cases."""
    path = write_eval(tmp_path / "toy", cases=4, systems=STEADY_SYSTEMS, extra_yaml=extra_yaml)
    set_own(path, own)
    return path


def set_own(path, own: dict[int, list[dict]]) -> None:
    dataset = path.parent / "cases.jsonl"
    rows = [json.loads(line) for line in dataset.read_text().splitlines()]
    for i, row in enumerate(rows):
        row.pop("evaluators", None)
        if i in own:
            row["evaluators"] = own[i]
    dataset.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _run(spec):
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    return info.run_dir


def _results(run_dir) -> list[dict]:
    return [json.loads(line) for line in run_dir.results.read_text().splitlines()]


def test_a_case_evaluator_judges_its_own_case_only(tmp_path):
    # case_1 asks for "answer 1" (its answer), case_2 for "answer 9" (not its answer).
    run_dir = _run(load_eval(_eval(tmp_path, {1: _own("answer 1"), 2: _own("answer 9")})))
    own = [r for r in _results(run_dir) if r["evaluator"] == "says_number"]
    assert sorted((r["case_id"], r["variant_name"], r["passed"]) for r in own) == [
        ("case_1", "base", True), ("case_1", "candidate", True),
        ("case_2", "base", False), ("case_2", "candidate", False)]
    assert all(r["evaluator_type"] == "regex_match" for r in own)
    # The eval's own evaluators still judge every cell.
    assert sum(r["evaluator"] == "mentions_paris" for r in _results(run_dir)) == 8


def test_a_case_evaluator_is_required_for_its_case_even_under_pass_criteria(tmp_path):
    criteria = "pass_criteria:\n  all_required: [mentions_paris]\n"
    spec = load_eval(_eval(tmp_path, {1: _own("answer 1"), 2: _own("answer 9")}, extra_yaml=criteria))
    run_dir = _run(spec)
    summary = write_summary(spec, run_dir)
    base = next(v for v in summary.variants if v.name == "base")
    # used_lookup is not required; case_2 fails on its own evaluator only.
    assert (base.cases_total, base.cases_passed) == (4, 3)
    failed = {cell.case_id for cell in inspect_run(run_dir, failed=True).cells}
    assert failed == {"case_2"}
    # Its pass rate counts the cases that have it (2), not every case.
    rates = {rollup.evaluator: rollup.by_variant["base"].pass_rate for rollup in summary.by_evaluator}
    assert rates["says_number"] == 0.5 and rates["mentions_paris"] == 1.0
    assert run_pass_criteria(run_dir).case_evaluators == ["says_number"]


def test_editing_one_cases_evaluator_rejudges_only_that_case(tmp_path):
    path = _eval(tmp_path, {1: _own("answer 1"), 2: _own("answer 9"), 3: _own("answer 3")})
    run_dir = _run(load_eval(path))
    before = {(r["case_id"], r["variant_name"]): r for r in _results(run_dir) if r["evaluator"] == "says_number"}
    # A run's cases are its snapshot: the edit is made there, as a resumed run would see it.
    rows = [json.loads(line) for line in run_dir.cases.read_text().splitlines()]
    rows[2]["evaluators"] = _own("answer 2")
    run_dir.cases.write_text("".join(json.dumps(row) + "\n" for row in rows))
    stats = asyncio.run(evaluate_traces(load_eval(path), run_dir))
    assert stats.results == 2  # case_2 on both variants, nothing else
    # Said as a changed evaluator; the traces of case_0 (without it) are not counted as judged.
    assert stats.evaluators_rejudged == ["says_number"] and stats.traces_appended == 2
    after = {(r["case_id"], r["variant_name"]): r for r in _results(run_dir) if r["evaluator"] == "says_number"}
    assert after[("case_2", "base")]["passed"] and after[("case_2", "candidate")]["passed"]
    for key in [("case_1", "base"), ("case_3", "candidate")]:
        assert after[key] == before[key]  # kept as judged
    assert after[("case_2", "base")]["evaluator_hash"] != before[("case_2", "base")]["evaluator_hash"]
    # Nothing changed since: nothing is judged.
    assert asyncio.run(evaluate_traces(load_eval(path), run_dir)).results == 0


def test_removing_a_case_evaluator_from_every_case_drops_its_results(tmp_path):
    path = _eval(tmp_path, {1: _own("answer 1")})
    run_dir = _run(load_eval(path))
    rows = [json.loads(line) for line in run_dir.cases.read_text().splitlines()]
    rows[1].pop("evaluators")
    run_dir.cases.write_text("".join(json.dumps(row) + "\n" for row in rows))
    asyncio.run(evaluate_traces(load_eval(path), run_dir))
    assert {r["evaluator"] for r in _results(run_dir)} == {"mentions_paris", "used_lookup"}
