"""Lineage per partition: every materialization of a run names its folder, config hash, fixtures,
spec and data version; `results` records the evaluator configuration that judged it, and
re-judging with edited evaluators replaces that record (in the run folder too)."""

from __future__ import annotations

import dagster as dg
import yaml

from evalh_pipeline.defs.launch import materialize_reevaluation, materialize_run
from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval


def _by_asset(instance, dagster_run_id):
    return {e.dagster_event.event_specific_data.materialization.asset_key.path[-1]:
            e.dagster_event.event_specific_data.materialization.metadata
            for e in instance.all_logs(dagster_run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)}


def test_every_materialization_carries_the_runs_lineage_and_results_the_evaluators_that_judged(tmp_path, instance):
    path = write_eval(tmp_path / "toy", cases=3)
    spec = load_eval(path)
    run_id = new_run_id(spec.name)
    outcome = materialize_run(spec, run_id, instance=instance)

    for stage, metadata in _by_asset(instance, outcome.dagster_run_ids[0]).items():
        assert metadata["run_dir"].value == str(outcome.run_dir.path), stage
        assert metadata["config_hash"].value == outcome.run_dir.read_config_hash(), stage
        assert metadata["fixture_key"].value and metadata["fixture_status"].value, stage
        assert metadata["spec_version"].value and metadata["data_version"].value.startswith(run_id), stage
    first = yaml.safe_load(outcome.run_dir.evaluators_yaml.read_text())
    assert [e["name"] for e in first["evaluators"]] == ["mentions_paris", "used_lookup"]

    path.write_text(path.read_text().replace(
        "    type: contains_text\n", "    type: contains_text\n    config: {all_of: [Berlin]}\n"))
    judged = materialize_reevaluation(load_eval(path), run_id, instance=instance)

    results = _by_asset(instance, judged.dagster_run_ids[0])["results"]
    second = yaml.safe_load(outcome.run_dir.evaluators_yaml.read_text())
    assert second["evaluators_config_hash"] != first["evaluators_config_hash"]
    assert results["evaluators_config_hash"].value == second["evaluators_config_hash"]
    assert {"all_of": ["Berlin"]} in [e.get("config") for e in second["evaluators"]]
    assert any(e.get("config") == {"all_of": ["Berlin"]} for e in results["evaluators_config"].value)
