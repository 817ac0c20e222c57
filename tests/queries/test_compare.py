"""Compare SQL: flips between two runs, each judged by its own pass_criteria, and deltas."""

from __future__ import annotations


import pytest

from evalh_pipeline.queries.compare import compare_runs
from tests.queries.support import A_CELLS, A_RESULTS, results_of, toy_run


def test_flips_and_deltas(tmp_path):
    a = toy_run(tmp_path, "A", A_CELLS, A_RESULTS)
    b_cells = {**A_CELLS, ("c2", "a"): (400, "timeout")}  # c2/a errors in B
    b_results = results_of({("c1", "a"): {"x": "pass"}, ("c3", "a"): {"x": "pass"},
                          ("c1", "b"): {"x": "fail"}, ("c2", "b"): {"x": "pass"}, ("c3", "b"): {"x": "pass"}})
    b = toy_run(tmp_path, "B", b_cells, b_results)

    report = compare_runs(a, b)

    comp = report.comparison
    assert (comp.kind, comp.baseline, comp.baseline_run_id) == ("ad_hoc", "A", None)
    assert {d.variant: (d.regressions, d.improvements) for d in comp.deltas} == {
        "a": (["c2"], ["c3"]), "b": (["c1"], ["c2", "c3"])}
    assert (comp.regressions_count, comp.improvements_count) == (2, 3)
    va, vb = report.variants
    assert va.variant == "a" and va.a.pass_rate == pytest.approx(2 / 3) and va.b.pass_rate == pytest.approx(2 / 3)
    assert va.pass_rate_delta == pytest.approx(0.0) and va.avg_latency_delta_ms == pytest.approx(100)
    assert vb.pass_rate_delta == pytest.approx(1 / 3) and vb.avg_latency_delta_ms == 0
    assert va.avg_cost_delta_usd == 0 and va.avg_tokens_input_delta == 0 and va.avg_tokens_output_delta is None
    assert (va.b.cases_errored, va.regressions, va.improvements, va.cases_compared) == (1, 1, 1, 3)
    assert report.has_regressions


def test_each_run_uses_its_own_pass_criteria(tmp_path):
    outcomes = {("c1", "a"): {"x": "pass", "y": "fail"}, ("c2", "a"): {"x": "fail", "y": "pass"}}
    cells = {("c1", "a"): (100, None), ("c2", "a"): (100, None)}
    a = toy_run(tmp_path, "A", cells, results_of(outcomes), variants=("a",))  # default: every evaluator
    b = toy_run(tmp_path, "B", cells, results_of(outcomes), {"all_required": ["x"]}, variants=("a",))

    report = compare_runs(a, b)

    (delta,) = report.comparison.deltas
    assert (delta.regressions, delta.improvements) == ([], ["c1"])
    assert delta.pass_rate_delta == pytest.approx(0.5)
    assert compare_runs(b, a).comparison.deltas[0].regressions == ["c1"]


def test_identical_runs_have_no_flips(tmp_path):
    a = toy_run(tmp_path, "A", A_CELLS, A_RESULTS)
    b = toy_run(tmp_path, "B", A_CELLS, A_RESULTS)
    report = compare_runs(a, b)
    assert report.comparison.regressions_count == 0 and not report.has_regressions
    assert all(v.pass_rate_delta == 0 and v.avg_latency_delta_ms == 0 for v in report.variants)


def test_variants_and_cases_on_one_side_only_are_not_flips(tmp_path):
    a = toy_run(tmp_path, "A", A_CELLS, A_RESULTS)
    b_cells = {("c1", "a"): (100, None), ("c4", "a"): (100, None), ("c1", "z"): (100, None)}
    b_results = results_of({("c1", "a"): {"x": "pass"}, ("c4", "a"): {"x": "fail"}, ("c1", "z"): {"x": "pass"}})
    b = toy_run(tmp_path, "B", b_cells, b_results, variants=("a", "z"))

    report = compare_runs(a, b)

    (va,) = report.variants
    assert (va.cases_compared, va.cases_only_in_a, va.cases_only_in_b) == (1, 2, 1)
    assert va.regressions == va.improvements == 0
    assert (report.variants_only_in_a, report.variants_only_in_b) == (["b"], ["z"])
