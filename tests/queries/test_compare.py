"""Compare SQL: flips between two runs, each judged by its own pass_criteria, and deltas."""

from __future__ import annotations

import json

import pytest

from evalh_pipeline.queries.compare import compare_runs
from evalh_pipeline.store.run_dir import RunDirectory
from tests.queries.test_summary import _write


def _run(tmp_path, name, cells, results, pass_criteria=None, variants=("a", "b")):
    run_dir = RunDirectory(tmp_path / name)
    _write(run_dir, cells, results)
    (run_dir.path / "run.json").write_text(json.dumps({"run_id": name, "variants": list(variants)}))
    config = "eval: {name: toy}\n"
    if pass_criteria is not None:
        config += "pass_criteria:\n" + "".join(f"  {k}: {json.dumps(v)}\n" for k, v in pass_criteria.items())
    (run_dir.path / "config.yaml").write_text(config)
    return run_dir


def _results(outcomes):
    return {(c, v, e): o for (c, v), per in outcomes.items() for e, o in per.items()}


A_CELLS = {("c1", "a"): (100, None), ("c2", "a"): (100, None), ("c3", "a"): (100, None),
           ("c1", "b"): (200, None), ("c2", "b"): (200, None), ("c3", "b"): (200, None)}
A_RESULTS = _results({("c1", "a"): {"x": "pass"}, ("c2", "a"): {"x": "pass"}, ("c3", "a"): {"x": "fail"},
                      ("c1", "b"): {"x": "pass"}, ("c2", "b"): {"x": "fail"}, ("c3", "b"): {"x": "fail"}})


def test_flips_and_deltas(tmp_path):
    a = _run(tmp_path, "A", A_CELLS, A_RESULTS)
    b_cells = {**A_CELLS, ("c2", "a"): (400, "timeout")}  # c2/a errors in B
    b_results = _results({("c1", "a"): {"x": "pass"}, ("c3", "a"): {"x": "pass"},
                          ("c1", "b"): {"x": "fail"}, ("c2", "b"): {"x": "pass"}, ("c3", "b"): {"x": "pass"}})
    b = _run(tmp_path, "B", b_cells, b_results)

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
    a = _run(tmp_path, "A", cells, _results(outcomes), variants=("a",))  # default: every evaluator
    b = _run(tmp_path, "B", cells, _results(outcomes), {"all_required": ["x"]}, variants=("a",))

    report = compare_runs(a, b)

    (delta,) = report.comparison.deltas
    assert (delta.regressions, delta.improvements) == ([], ["c1"])
    assert delta.pass_rate_delta == pytest.approx(0.5)
    assert compare_runs(b, a).comparison.deltas[0].regressions == ["c1"]


def test_identical_runs_have_no_flips(tmp_path):
    a = _run(tmp_path, "A", A_CELLS, A_RESULTS)
    b = _run(tmp_path, "B", A_CELLS, A_RESULTS)
    report = compare_runs(a, b)
    assert report.comparison.regressions_count == 0 and not report.has_regressions
    assert all(v.pass_rate_delta == 0 and v.avg_latency_delta_ms == 0 for v in report.variants)


def test_variants_and_cases_on_one_side_only_are_not_flips(tmp_path):
    a = _run(tmp_path, "A", A_CELLS, A_RESULTS)
    b_cells = {("c1", "a"): (100, None), ("c4", "a"): (100, None), ("c1", "z"): (100, None)}
    b_results = _results({("c1", "a"): {"x": "pass"}, ("c4", "a"): {"x": "fail"}, ("c1", "z"): {"x": "pass"}})
    b = _run(tmp_path, "B", b_cells, b_results, variants=("a", "z"))

    report = compare_runs(a, b)

    (va,) = report.variants
    assert (va.cases_compared, va.cases_only_in_a, va.cases_only_in_b) == (1, 2, 1)
    assert va.regressions == va.improvements == 0
    assert (report.variants_only_in_a, report.variants_only_in_b) == (["b"], ["z"])
