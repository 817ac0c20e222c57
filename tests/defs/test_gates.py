"""Release gates: asset checks on each run's summary, reported by the CLI, run failures only when blocking."""

from __future__ import annotations

import dagster as dg

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.launch import materialize_run
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import STEADY_SYSTEMS, write_eval



def _check_results(instance, eval_name):
    records = instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey([eval_name, "summary"]), "no_regressions_vs_baseline_variant"), limit=5)
    return records


def test_regressions_fail_the_gate_with_the_case_ids_and_the_run_completes(tmp_path, instance):
    spec = load_eval(write_eval(tmp_path / "toy", cases=6))
    outcome = materialize_run(spec, new_run_id(spec.name), instance=instance)
    assert outcome.summary.comparison.regressions_count == 2
    assert outcome.failed_checks == ["toy/summary: no_regressions_vs_baseline_variant"]
    (record,) = _check_results(instance, "toy")
    evaluation = record.event.dagster_event.event_specific_data
    assert evaluation.passed is False and evaluation.metadata["regressions"].value == 2
    assert evaluation.metadata["regressed_case_ids"].value == {"candidate": ["case_0", "case_3"]}
    assert "case_0" in evaluation.description


def test_pass_rate_floor_and_errored_fraction_gates(tmp_path, instance):
    path = write_eval(tmp_path / "toy", cases=6,
                      extra_yaml="gates: {pass_rate_floor: 0.9, max_errored_fraction: 0.0}\n")
    outcome = materialize_run(load_eval(path), new_run_id("toy"), instance=instance)
    assert sorted(outcome.failed_checks) == [
        "toy/summary: no_regressions_vs_baseline_variant",
        "toy/summary: pass_rate_floor",
    ]


def test_a_clean_run_passes_every_gate(tmp_path, instance):
    path = write_eval(tmp_path / "toy", cases=4, systems=STEADY_SYSTEMS,
                      extra_yaml="gates: {pass_rate_floor: 0.9, max_errored_fraction: 0.0}\n")
    outcome = materialize_run(load_eval(path), new_run_id("toy"), instance=instance)
    assert outcome.failed_checks == []


def test_gates_block_only_when_the_eval_opts_in(tmp_path):
    advisory = load_eval(write_eval(tmp_path / "a", cases=1))
    blocking = load_eval(write_eval(tmp_path / "b", cases=1, extra_yaml="gates: {blocking: true}\n"))
    defs, _ = build_definitions([advisory, blocking])
    graph = defs.resolve_asset_graph()
    for name, expected in (("a", False), ("b", True)):
        key = dg.AssetCheckKey(dg.AssetKey([name, "summary"]), "no_regressions_vs_baseline_variant")
        assert graph.get_check_spec(key).blocking is expected
        complete = dg.AssetCheckKey(dg.AssetKey([name, "summary"]), "complete")
        assert graph.get_check_spec(complete).blocking is False


def _significance_checks(instance, eval_name, asset, name):
    return instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey([eval_name, asset]), name), limit=5)


def test_significance_gate_lets_noise_through_and_replaces_the_count_gate(tmp_path, instance):
    # 6 cases, every third broken on `new`: 2 regressions, 0 improvements -> p = 0.5.
    path = write_eval(tmp_path / "toy", cases=6, extra_yaml="gates: {no_significant_regression: {alpha: 0.05}}\n")
    outcome = materialize_run(load_eval(path), new_run_id("toy"), instance=instance)
    assert outcome.summary.comparison.regressions_count == 2
    assert outcome.failed_checks == []
    (record,) = _significance_checks(instance, "toy", "summary", "no_significant_regression_vs_baseline_variant")
    evaluation = record.event.dagster_event.event_specific_data
    assert evaluation.passed is True and evaluation.metadata["alpha"].value == 0.05
    verdicts = [m.value for k, m in evaluation.metadata.items() if k.startswith("verdict/")]
    assert verdicts and all("not distinguishable from noise" in v or "no case changed" in v for v in verdicts)
    # Nothing promoted yet: the drift side passes and says so.
    (drift_record,) = _significance_checks(instance, "toy", "drift", "no_significant_regression_vs_promoted_baseline")
    assert drift_record.event.dagster_event.event_specific_data.passed is True


def test_significance_gate_fails_on_a_real_regression(tmp_path, instance):
    # 30 cases: 10 regressions, 0 improvements -> p = 0.002.
    path = write_eval(tmp_path / "toy", cases=30, extra_yaml="gates: {no_significant_regression: true}\n")
    outcome = materialize_run(load_eval(path), new_run_id("toy"), instance=instance)
    assert outcome.failed_checks == ["toy/summary: no_significant_regression_vs_baseline_variant"]
    (record,) = _significance_checks(instance, "toy", "summary", "no_significant_regression_vs_baseline_variant")
    evaluation = record.event.dagster_event.event_specific_data
    assert evaluation.passed is False
    assert "p = 0.002: a real regression" in evaluation.description
    # The summary's materialization shows the same statistics.
    metadata = instance.get_latest_materialization_event(
        dg.AssetKey(["toy", "summary"])).asset_materialization.metadata
    assert metadata["mcnemar_p_value/candidate"].value == 0.001953125  # scipy binomtest(0, 10)
    assert metadata["verdict/candidate"].value.endswith("p = 0.002: a real regression")
    assert metadata["delta_ci95/candidate"].value.endswith(" pp")


def test_non_inferiority_is_an_asset_check_that_fails_an_eval_too_small_to_show_it(tmp_path, instance):
    # 30 cases, 10 of them lost by `candidate`: nowhere near shown within 3 points of `base`.
    path = write_eval(tmp_path / "toy", cases=30, extra_yaml=(
        "gates: {non_inferiority: {margin: 0.03}, no_regressions_vs_baseline_variant: false}\n"))
    outcome = materialize_run(load_eval(path), new_run_id("toy"), instance=instance)
    assert outcome.failed_checks == ["toy/summary: non_inferiority_vs_baseline_variant"]
    (record,) = _significance_checks(instance, "toy", "summary", "non_inferiority_vs_baseline_variant")
    evaluation = record.event.dagster_event.event_specific_data
    assert evaluation.passed is False and evaluation.metadata["margin"].value == 0.03
    assert "below -3.0 pp (this eval can see drops of" in evaluation.description
    (drift_record,) = _significance_checks(instance, "toy", "drift", "non_inferiority_vs_promoted_baseline")
    assert drift_record.event.dagster_event.event_specific_data.passed is True  # nothing promoted yet
