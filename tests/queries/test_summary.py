"""Summary SQL: pass criteria, error counting, comparison against the baseline variant."""

from __future__ import annotations


from evalh_pipeline.config.schema import PassCriteria
from evalh_pipeline.queries.summary import summarize_run
from evalh_pipeline.store.run_dir import RunDirectory
from tests.queries.support import summarize_records, write_records

CELLS = {("c1", "a"): (100, None), ("c2", "a"): (200, None), ("c1", "b"): (150, None), ("c2", "b"): (250, "timeout")}


def test_default_criteria_require_every_evaluator_and_count_errors_as_failures(tmp_path):
    results = {("c1", "a", "x"): "pass", ("c1", "a", "y"): "pass", ("c2", "a", "x"): "pass", ("c2", "a", "y"): "error",
               ("c1", "b", "x"): "pass", ("c1", "b", "y"): "pass"}
    s = summarize_records(tmp_path, CELLS, results)
    a, b = s.variants
    assert (a.name, a.cases_passed, a.pass_rate) == ("a", 1, 0.5)
    assert (b.cases_passed, b.cases_errored) == (1, 1)  # c2/b has no results: failed, and errored
    assert a.avg_latency_ms == 150 and b.avg_latency_ms == 200
    assert a.avg_cost_usd == 0.5 and a.avg_tokens_input == 10



def test_evaluator_rollups_count_results_whose_evaluator_failed(tmp_path):
    results = {("c1", "a", "x"): "pass", ("c2", "a", "x"): "error", ("c1", "b", "x"): "error", ("c2", "b", "x"): "fail"}
    s = summarize_records(tmp_path, CELLS, results)
    (rollup,) = s.by_evaluator
    assert {v: (r.pass_rate, r.errored) for v, r in rollup.by_variant.items()} == {"a": (0.5, 1), "b": (0.0, 1)}

def test_all_required_and_any_required(tmp_path):
    results = {("c1", "a", "x"): "pass", ("c1", "a", "y"): "fail", ("c1", "a", "z"): "pass",
               ("c2", "a", "x"): "pass", ("c2", "a", "y"): "fail", ("c2", "a", "z"): "fail"}
    s = summarize_records(tmp_path, CELLS, results, PassCriteria(all_required=["x"], any_required=["y", "z"]))
    assert s.variants[0].cases_passed == 1


def test_comparison_lists_regressions_and_improvements_against_the_baseline(tmp_path):
    results = {("c1", "a", "x"): "pass", ("c2", "a", "x"): "fail", ("c1", "b", "x"): "fail", ("c2", "b", "x"): "pass"}
    cells = {**CELLS, ("c2", "b"): (250, None)}  # an errored cell never passes, so never improves
    s = summarize_records(tmp_path, cells, results)
    (delta,) = s.comparison.deltas
    assert (delta.variant, delta.regressions, delta.improvements) == ("b", ["c1"], ["c2"])
    assert delta.pass_rate_delta == 0.0 and delta.avg_latency_delta_ms == 50
    assert s.comparison.kind == "ad_hoc" and s.comparison.regressions_count == 1


def test_per_evaluator_rollup(tmp_path):
    results = {("c1", "a", "x"): "pass", ("c2", "a", "x"): "fail", ("c1", "b", "x"): "pass", ("c2", "b", "x"): "error"}
    s = summarize_records(tmp_path, CELLS, results, baseline=None)
    (rollup,) = s.by_evaluator
    assert rollup.by_variant["a"].pass_rate == 0.5 and rollup.by_variant["b"].pass_rate == 0.5
    assert s.comparison is None


def test_records_of_another_major_version_are_refused(tmp_path):
    import pytest

    from evalh_pipeline.models.versioning import SchemaVersionError

    run_dir = RunDirectory(tmp_path / "run")
    write_records(run_dir, CELLS, {})
    run_dir.traces.write_text(run_dir.traces.read_text().replace('"schema_version": "1.0"', '"schema_version": "2.0"', 1))
    with pytest.raises(SchemaVersionError, match="2.0"):
        summarize_run(run_dir, variant_order=["a", "b"], pass_criteria=PassCriteria(), baseline_variant="a",
                      config_path="e", config_hash="h", cases_total=2)
