"""The asset graph: one group per eval, one Dagster run per eval run (every variant), metadata, re-evaluation."""

from __future__ import annotations

import json

import dagster as dg

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.discovery import discover_evals
from evalh_pipeline.defs.launch import materialize_reevaluation, materialize_run
from evalh_pipeline.store.jsonl import iter_lines
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval


def _records(path):
    return [json.loads(line) for _, line in iter_lines(path)]


def _calls(log):
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()] if log.exists() else []


def test_each_eval_in_folder_becomes_an_asset_group(tmp_path):
    write_eval(tmp_path / "evals" / "alpha")
    write_eval(tmp_path / "evals" / "beta")
    (tmp_path / "evals" / "broken").mkdir()
    (tmp_path / "evals" / "broken" / "eval.yaml").write_text("eval: {name: broken}\n")
    found = discover_evals([tmp_path / "evals"])
    assert [s.name for s in found.specs] == ["alpha", "beta"]
    assert list(found.broken) == [tmp_path / "evals" / "broken" / "eval.yaml"]

    defs, _ = build_definitions(found.specs)
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {"alpha/cases", "alpha/traces", "alpha/results", "alpha/summary", "beta/summary"} <= keys
    # One dynamic partition per eval run: a partition is a whole run, every variant; the
    # baseline is the eval's one pointer, not partitioned.
    for eval_name in ("alpha", "beta"):
        for stage in ("cases", "traces", "results", "summary", "drift"):
            partitions = graph.get(dg.AssetKey([eval_name, stage])).partitions_def
            assert isinstance(partitions, dg.DynamicPartitionsDefinition)
            assert partitions.name == f"{eval_name}__runs"
        assert graph.get(dg.AssetKey([eval_name, "baseline"])).partitions_def is None


def test_any_yaml_with_the_eval_keys_is_an_eval(tmp_path):
    first = write_eval(tmp_path / "evals" / "alpha")
    second = first.parent / "alpha_nightly.yml"
    second.write_text(first.read_text().replace("name: alpha", "name: alpha_nightly"))
    found = discover_evals([tmp_path / "evals"])
    assert sorted(s.name for s in found.specs) == ["alpha", "alpha_nightly"]
    assert found.broken == {}  # cases.yaml is not an eval file


def test_the_run_job_covers_every_stage_in_one_process(tmp_path):
    spec = load_eval(write_eval(tmp_path / "toy", cases=1))
    defs, built = build_definitions([spec])
    job = defs.resolve_job_def(built["toy"].run_job)
    assert {k.to_user_string() for k in job.asset_layer.selected_asset_keys} == {
        "toy/cases", "toy/traces", "toy/results", "toy/summary", "toy/drift"}
    assert job.executor_def.name == "in_process"


def test_run_materializes_all_stages_with_metadata(tmp_path, instance, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("EVALH_TEST_CALL_LOG", str(log))
    spec = load_eval(write_eval(tmp_path / "toy", cases=6))
    run_id = new_run_id(spec.name)

    outcome = materialize_run(spec, run_id, instance=instance)

    assert len(outcome.dagster_run_ids) == 1  # one Dagster run for the whole eval run
    assert len(_calls(log)) == 12  # 6 cases x 2 variants, each called exactly once
    assert {v.name: v.pass_rate for v in outcome.summary.variants} == {"base": 1.0, "candidate": 4 / 6}
    assert outcome.summary.comparison.deltas[0].regressions == ["case_0", "case_3"]

    event = instance.get_latest_materialization_event(dg.AssetKey(["toy", "summary"]))
    assert event.asset_materialization.partition == run_id
    assert instance.get_dynamic_partitions("toy__runs") == [run_id]
    meta = event.asset_materialization.metadata
    assert meta["run_id"].value == run_id
    assert meta["complete"].value is True and meta["expected_cells"].value == 12
    assert meta["pass_rate/candidate"].value == 4 / 6  # a number, for the UI's plots
    # Beside it, the rate as people read it, with Wilson's interval (statsmodels: 0.3000 to 0.9032).
    assert meta["pass_rate_text/candidate"].value == "66.7% (95% CI 30.0–90.3%)"
    # In percentage points, rounded to one decimal as the terminal shows it (not 0.6931…).
    mde = meta["mde_pp/candidate"].value
    assert 0 < mde <= 100 and mde == round(mde, 1)
    assert "this eval can see drops of" in meta["reading/candidate"].value
    assert meta["regressions"].value == 2
    assert meta["run_dir"].value == str(outcome.run_dir.path)
    assert meta["config_hash"].value == outcome.run_dir.read_config_hash()
    assert "| candidate |" in meta["variants"].value

    (traces,) = instance.fetch_materializations(dg.AssetKey(["toy", "traces"]), limit=10).records
    assert traces.asset_materialization.metadata["cells"].value == 12
    assert traces.run_id == outcome.dagster_run_ids[0]


def test_reevaluation_uses_new_evaluator_config_without_calling_the_system(tmp_path, instance, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("EVALH_TEST_CALL_LOG", str(log))
    path = write_eval(tmp_path / "toy", cases=6)
    spec = load_eval(path)
    run_id = new_run_id(spec.name)
    outcome = materialize_run(spec, run_id, instance=instance)
    calls_after_run = len(_calls(log))

    # Tighten the contains_text evaluator: now every answer fails it.
    path.write_text(path.read_text().replace(
        "    type: contains_text\n", "    type: contains_text\n    config: {all_of: [Berlin]}\n"))
    changed = load_eval(path)
    for _ in range(2):
        again = materialize_reevaluation(changed, run_id, instance=instance)

    assert len(_calls(log)) == calls_after_run
    results = _records(outcome.run_dir.results)
    keys = [(r["case_id"], r["variant_name"], r["evaluator"]) for r in results]
    assert len(keys) == len(set(keys)) == 6 * 2 * 2
    assert all(not r["passed"] for r in results if r["evaluator"] == "mentions_paris")
    assert {v.pass_rate for v in again.summary.variants} == {0.0}


def test_rematerializing_traces_runs_only_cells_without_a_trace(tmp_path, instance, monkeypatch):
    log = tmp_path / "calls.log"
    monkeypatch.setenv("EVALH_TEST_CALL_LOG", str(log))
    spec = load_eval(write_eval(tmp_path / "toy", cases=5))
    run_id = new_run_id(spec.name)
    outcome = materialize_run(spec, run_id, instance=instance)
    lines = outcome.run_dir.traces.read_text().splitlines(keepends=True)
    kept, dropped = lines[:6], lines[6:]
    # Simulate a kill: four traces lost, and a torn half-line at the end.
    outcome.run_dir.traces.write_text("".join(kept) + dropped[0][:40])
    log.unlink()

    materialize_run(spec, run_id, instance=instance)

    rerun = sorted(_calls(log))
    expected = sorted((t["case_id"], t["variant_name"]) for t in map(json.loads, dropped))
    assert rerun == expected
    traces = _records(outcome.run_dir.traces)
    cells = [(t["case_id"], t["variant_name"]) for t in traces]
    assert len(cells) == len(set(cells)) == 10


def test_traces_and_results_materializations_carry_counts_and_tables(tmp_path, instance):
    spec = load_eval(write_eval(tmp_path / "toy", cases=6))
    run_id = new_run_id(spec.name)
    outcome = materialize_run(spec, run_id, instance=instance)

    traces = instance.get_latest_materialization_event(dg.AssetKey(["toy", "traces"])).asset_materialization.metadata
    assert traces["cells"].value == 12 and traces["cells_run"].value == 12
    assert traces["config_hash"].value == outcome.run_dir.read_config_hash()
    assert "| candidate | 6 | 0 |" in traces["cells_by_variant"].value

    results = instance.get_latest_materialization_event(dg.AssetKey(["toy", "results"])).asset_materialization.metadata
    assert results["results"].value == 24
    assert results["evaluator_pass_rate/candidate"].value == 10 / 12
    assert "| mentions_paris | 6/6 | 4/6 |" in results["verdicts"].value


def _partitions_by_event(instance, dagster_run_id):
    """(kind, asset/check, partition) of every materialization and check evaluation of a Dagster run."""
    found = []
    for record in instance.all_logs(dagster_run_id, of_type={dg.DagsterEventType.ASSET_MATERIALIZATION,
                                                              dg.DagsterEventType.ASSET_CHECK_EVALUATION}):
        data = record.dagster_event.event_specific_data
        if record.dagster_event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
            found.append(("materialization", data.materialization.asset_key.path[-1], data.materialization.partition))
        else:
            found.append(("check", data.check_name, data.partition))
    return found


def test_every_materialization_and_check_of_a_run_carries_its_partition_and_reevaluation_adds_only_results_on(
        tmp_path, instance):
    spec = load_eval(write_eval(tmp_path / "toy", cases=3))
    first, second = new_run_id(spec.name), new_run_id(spec.name)
    ran = materialize_run(spec, first, instance=instance)
    materialize_run(spec, second, instance=instance)

    events = _partitions_by_event(instance, ran.dagster_run_ids[0])
    assert {(kind, name) for kind, name, _ in events if kind == "materialization"} == {
        ("materialization", s) for s in ("cases", "traces", "results", "summary", "drift")}
    assert any(kind == "check" and name == "complete" for kind, name, _ in events)
    assert {partition for _, _, partition in events} == {first}
    assert sorted(instance.get_dynamic_partitions("toy__runs")) == sorted([first, second])

    judged = materialize_reevaluation(spec, first, instance=instance)

    events = _partitions_by_event(instance, judged.dagster_run_ids[0])
    assert sorted(name for kind, name, _ in events if kind == "materialization") == ["drift", "results", "summary"]
    assert {partition for _, _, partition in events} == {first}
    # The first run's partition has a second results materialization and still one traces one.
    results = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(["toy", "results"]), asset_partitions=[first]), limit=10).records
    traces = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(["toy", "traces"]), asset_partitions=[first]), limit=10).records
    assert len(results) == 2 and len(traces) == 1
    # The other run's summary is untouched: re-judging an old run never makes it another run's "latest".
    other = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(["toy", "summary"]), asset_partitions=[second]), limit=10).records
    assert len(other) == 1
