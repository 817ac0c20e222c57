"""The drift asset: each run against the eval's promoted baseline, gated by a red check (blocking only on opt-in)."""

from __future__ import annotations

import dagster as dg

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.defs.launch import materialize_promotion, materialize_run
from evalh_pipeline.runner.drift import load_drift
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import STEADY_SYSTEMS, write_eval

# Only the promoted-baseline gate, so the expected failed checks are exactly the drift one.
DRIFT_GATE_ONLY = "gates: {no_regressions_vs_baseline_variant: false}\n"
BLOCKING = "gates: {blocking: true}\n"
DRIFT_KEY = dg.AssetKey(["toy", "drift"])
CHECK_KEY = dg.AssetCheckKey(DRIFT_KEY, "no_regressions_vs_promoted_baseline")


def _latest_check(instance):
    (record,) = instance.event_log_storage.get_asset_check_execution_history(CHECK_KEY, limit=1)
    return record.event.dagster_event.event_specific_data


def _drift_metadata(instance):
    return instance.get_latest_materialization_event(DRIFT_KEY).asset_materialization.metadata


def test_without_a_promoted_baseline_drift_materializes_and_the_gate_passes(tmp_path, instance):
    spec = load_eval(write_eval(tmp_path / "toy", cases=4, systems=STEADY_SYSTEMS))
    outcome = materialize_run(spec, new_run_id("toy"), instance=instance)

    assert outcome.failed_checks == []
    drift = load_drift(outcome.run_dir)
    assert (drift["status"], drift["baseline_run_id"], drift["comparison"]) == ("no_baseline", None, None)
    report = (outcome.run_dir.path / "drift.md").read_text()
    assert f"No promoted baseline: nothing to compare with (`evalh promote {outcome.run_dir.path}`)" in report
    metadata = _drift_metadata(instance)
    assert metadata["has_baseline"].value is False and metadata["regressions_count"].value == 0
    check = _latest_check(instance)
    assert check.passed and check.metadata["has_baseline"].value is False


def test_a_known_regression_against_the_promoted_baseline_is_a_red_check_with_the_case_ids(tmp_path, instance):
    folder = tmp_path / "toy"
    steady = load_eval(write_eval(folder, cases=6, systems=STEADY_SYSTEMS, extra_yaml=DRIFT_GATE_ONLY))
    first = materialize_run(steady, new_run_id("toy"), instance=instance)
    materialize_promotion(steady, first.run_dir.run_id, instance=instance)
    # The default systems break every third case of `candidate`: case_0 and case_3 regress.
    broken = load_eval(write_eval(folder, cases=6, extra_yaml=DRIFT_GATE_ONLY))

    second = materialize_run(broken, new_run_id("toy"), instance=instance)

    assert second.failed_checks == ["toy/drift: no_regressions_vs_promoted_baseline"]
    drift = load_drift(second.run_dir)
    assert (drift["status"], drift["baseline_run_id"]) == ("compared", first.run_dir.run_id)
    deltas = {d["variant"]: d for d in drift["comparison"]["comparison"]["deltas"]}
    assert deltas["candidate"]["regressions"] == ["case_0", "case_3"] and deltas["base"]["regressions"] == []
    assert drift["comparison"]["comparison"]["kind"] == "drift"
    report = (second.run_dir.path / "drift.md").read_text()
    assert report.index("## Regressions") < report.index("## Variants")
    assert "`candidate` (2): `case_0`, `case_3`" in report

    metadata = _drift_metadata(instance)
    assert metadata["baseline_run_id"].value == first.run_dir.run_id
    assert metadata["regressions_count"].value == 2
    assert metadata["pass_rate_delta_pp/candidate"].value == -33.3  # points, rounded as everywhere shown
    assert "## Regressions" in metadata["report"].value
    check = _latest_check(instance)
    assert not check.passed and check.metadata["regressions"].value == 2
    assert check.metadata["regressed_case_ids"].value == {"candidate": ["case_0", "case_3"]}
    # Not blocking by default: the Dagster run succeeded, the gate is a red check.
    assert instance.get_run_by_id(second.dagster_run_ids[-1]).status == dg.DagsterRunStatus.SUCCESS


def test_a_failed_summary_gate_still_computes_drift(tmp_path, instance):
    spec = load_eval(write_eval(tmp_path / "toy", cases=6))  # candidate regresses against base
    outcome = materialize_run(spec, new_run_id("toy"), instance=instance)

    assert outcome.failed_checks == ["toy/summary: no_regressions_vs_baseline_variant"]
    assert instance.get_latest_materialization_event(DRIFT_KEY) is not None
    assert outcome.run_dir.drift.exists()
    assert instance.get_run_by_id(outcome.dagster_run_ids[-1]).status == dg.DagsterRunStatus.SUCCESS


def test_with_blocking_gates_a_failed_summary_gate_fails_the_run_and_stops_drift(tmp_path, instance):
    spec = load_eval(write_eval(tmp_path / "toy", cases=6, extra_yaml=BLOCKING))
    outcome = materialize_run(spec, new_run_id("toy"), instance=instance)

    assert outcome.failed_checks == ["toy/summary: no_regressions_vs_baseline_variant"]
    assert instance.get_latest_materialization_event(DRIFT_KEY) is None
    assert not outcome.run_dir.drift.exists()
    assert instance.get_run_by_id(outcome.dagster_run_ids[-1]).status == dg.DagsterRunStatus.FAILURE


def test_the_promoted_baseline_gate_turned_off_passes_and_says_so(tmp_path, instance):
    folder = tmp_path / "toy"
    steady = load_eval(write_eval(folder, cases=6, systems=STEADY_SYSTEMS, extra_yaml=DRIFT_GATE_ONLY))
    first = materialize_run(steady, new_run_id("toy"), instance=instance)
    materialize_promotion(steady, first.run_dir.run_id, instance=instance)
    off = "gates: {no_regressions_vs_baseline_variant: false, no_regressions_vs_promoted_baseline: false}\n"
    broken = load_eval(write_eval(folder, cases=6, extra_yaml=off))

    second = materialize_run(broken, new_run_id("toy"), instance=instance)

    assert second.failed_checks == []
    assert load_drift(second.run_dir)["regressions_count"] == 2
    check = _latest_check(instance)
    assert check.passed and "false in eval.yaml" in check.description
