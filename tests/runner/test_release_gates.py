"""The release gates judged by the engine (runner/gates.py), as `evalh re-evaluate` prints them
and the asset checks report them."""

from __future__ import annotations

import asyncio

import pytest

from evalh_pipeline.runner.drift import write_drift
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.gates import DRIFT, SUMMARY, Json, Markdown, RunFiles, blocked, judge_gates
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from tests.support.evals import write_eval


def _judged_run(tmp_path, extra_yaml: str = ""):
    spec = load_eval(write_eval(tmp_path / "toy", cases=6, extra_yaml=extra_yaml))  # candidate fails case_0, case_3
    run_dir = prepare_cases(spec, "r1").run_dir
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir))
    write_summary(spec, run_dir)
    return spec, run_dir


def test_summary_gates_in_name_order_with_the_regressed_cases(tmp_path):
    spec, run_dir = _judged_run(tmp_path, "gates: {pass_rate_floor: 0.9, max_errored_fraction: 0.0}\n")
    judged = judge_gates(spec, run_dir, SUMMARY)
    assert [j.gate.name for j in judged] == sorted(j.gate.name for j in judged)
    failed = {j.label(spec.name): j.verdict for j in judged if not j.verdict.passed}
    assert sorted(failed) == ["toy/summary: no_regressions_vs_baseline_variant", "toy/summary: pass_rate_floor"]
    regressions = failed["toy/summary: no_regressions_vs_baseline_variant"]
    assert regressions.metadata["regressed_case_ids"] == Json({"candidate": ["case_0", "case_3"]})
    assert isinstance(regressions.metadata["cases"], Markdown) and "case_3" in regressions.metadata["cases"].text
    assert failed["toy/summary: pass_rate_floor"].description == "candidate at 66.7% (floor 90%)"
    errored = next(j.verdict for j in judged if j.gate.name == "errored_cells_under_threshold")
    assert errored.passed and errored.description == "every variant at or under 0% errored"
    assert not blocked(spec, judged)  # gates.blocking is off


def test_a_failed_gate_blocks_only_when_the_eval_says_so_and_complete_never_does(tmp_path):
    spec, run_dir = _judged_run(tmp_path, "gates: {blocking: true}\n")
    judged = judge_gates(spec, run_dir, SUMMARY)
    assert blocked(spec, judged)
    assert not blocked(spec, [j for j in judged if j.gate.name == "complete"])


def test_drift_gates_pass_without_a_promoted_baseline_and_off_gates_say_so(tmp_path):
    spec, run_dir = _judged_run(tmp_path)
    write_drift(spec.name, run_dir)
    judged = {j.gate.name: j.verdict for j in judge_gates(spec, run_dir, DRIFT)}
    assert judged["no_regressions_vs_promoted_baseline"].passed
    assert judged["no_regressions_vs_promoted_baseline"].description == "no promoted baseline yet (evalh promote)"
    off = judged["no_significant_regression_vs_promoted_baseline"]
    assert off.passed and off.off and "gates.no_significant_regression" in off.description


def test_gates_judge_a_summary_they_are_given_without_reading_summary_yaml(tmp_path):
    spec, run_dir = _judged_run(tmp_path, "gates: {pass_rate_floor: 0.9}\n")
    from_file = {j.gate.name: j.verdict for j in judge_gates(spec, run_dir, SUMMARY)}
    summary = write_summary(spec, run_dir)
    run_dir.summary.unlink()  # what the CLI has in hand after writing it is what the gates judge
    given = {j.gate.name: j.verdict for j in judge_gates(spec, RunFiles(run_dir, summary), SUMMARY)}
    assert given == from_file


def test_non_inferiority_fails_an_eval_too_small_to_show_it_with_what_it_can_see(tmp_path):
    spec, run_dir = _judged_run(tmp_path, "gates: {non_inferiority: {margin: 0.03}}\n")
    judged = {j.gate.name: j.verdict for j in judge_gates(spec, run_dir, SUMMARY)}
    verdict = judged["non_inferiority_vs_baseline_variant"]
    # 2 of 6 cases got worse: Tango's interval reaches far below -3 pp, so it fails and says why.
    assert not verdict.passed
    assert verdict.description.startswith("candidate: the delta's 95% CI reaches -")
    assert "below -3.0 pp (this eval can see drops of" in verdict.description
    assert verdict.metadata["margin"] == 0.03 and verdict.metadata["delta_ci_low/candidate"] < -0.03
    assert 0 < verdict.metadata["mde/candidate"] <= 1


def test_non_inferiority_with_no_discordant_pair_still_needs_enough_cases():
    from evalh_pipeline.runner.gates import _non_inferiority_verdict
    from evalh_pipeline.stats.paired import compare_paired

    # Nothing moved in 30 cases: the interval is not [0, 0], and 30 cases cannot show a 3-point margin.
    small = compare_paired({0.0: 30}).model_dump()
    assert small["delta_ci95"][0] < -0.03
    assert not _non_inferiority_verdict({"v": small}, 0.03).passed
    large = compare_paired({0.0: 2000}).model_dump()
    assert _non_inferiority_verdict({"v": large}, 0.03).passed


def test_significance_gate_adjusts_p_values_with_holm_across_its_variants():
    from statsmodels.stats.multitest import multipletests

    from evalh_pipeline.runner.gates import _significance_verdict

    stats = {"a": {"mcnemar_p_value": 0.03, "cases_worse": 9, "cases_better": 1, "verdict": "a"},
             "b": {"mcnemar_p_value": 0.04, "cases_worse": 9, "cases_better": 1, "verdict": "b"}}
    verdict = _significance_verdict(stats, 0.05)
    # Each p is below 0.05 on its own; over the family of two neither is.
    assert verdict.passed and "Holm-adjusted over 2 variant(s)" in verdict.description
    expected = multipletests([0.03, 0.04], method="holm")[1]
    assert [verdict.metadata["p_value_holm/a"], verdict.metadata["p_value_holm/b"]] == pytest.approx(list(expected))
    assert verdict.metadata["mcnemar_p_value/a"] == 0.03  # the raw p-value beside the adjusted one
    alone = _significance_verdict({"a": stats["a"]}, 0.05)
    assert not alone.passed


def test_gates_on_verdicts_say_results_could_not_be_judged_and_the_errored_gate_does_not(tmp_path):
    from evalh_pipeline.models import NotJudged

    spec, run_dir = _judged_run(tmp_path, "gates: {pass_rate_floor: 0.5, max_errored_fraction: 0.0}\n")
    missing = NotJudged(results=3, by_evaluator={"quality": 3}, why="the judge was unreachable",
                        message="judge call to http://127.0.0.1:9/v1/chat/completions failed (after 2 attempts)")
    summary = RunFiles(run_dir).summary.model_copy(update={"not_judged": missing})

    judged = {j.gate.name: j.verdict for j in judge_gates(spec, RunFiles(run_dir, summary), SUMMARY)}

    said = ("3 result(s) could not be judged (the judge was unreachable: judge call to "
            "http://127.0.0.1:9/v1/chat/completions failed (after 2 attempts))")
    assert judged["pass_rate_floor"].description == said and not judged["pass_rate_floor"].passed
    regressions = judged["no_regressions_vs_baseline_variant"]
    assert not regressions.passed and regressions.metadata["not_judged"] == 3
    assert regressions.description == said + "; on the judged cells: 2 regression(s) against base: candidate: case_0, case_3"
    assert judged["errored_cells_under_threshold"].passed  # errored traces only
    assert judged["no_significant_regression_vs_baseline_variant"].off  # an off gate stays off
