"""Data versions: traces and results carry a version of their file, so a changed evaluator
(which rewrites results.jsonl) or a resume (which appends traces) shows downstream assets as
changed upstream in the UI, and an unchanged re-evaluation does not.

The partition view of the UI shows a partition "stale: upstream data changed" when an
upstream partition's data version differs from the one its last materialization consumed:
these tests ask Dagster's own resolver (the one the UI uses) about the run's partition.
"""

from __future__ import annotations

import dagster as dg

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.defs.definitions import build_definitions
from evalh_pipeline.defs.evals.names import judge_job
from evalh_pipeline.defs.launch import materialize_reevaluation, materialize_run
from evalh_pipeline.store.run_dir import new_run_id
from tests.support.evals import write_eval


def _latest(instance, *path: str) -> dg.AssetMaterialization:
    event = instance.get_latest_materialization_event(dg.AssetKey(list(path)))
    return event.asset_materialization


def _version(instance, *path: str) -> str:
    return _latest(instance, *path).tags["dagster/data_version"]


def _summary_is_stale(instance, spec, run_id) -> bool:
    from dagster._core.definitions.data_version import StaleStatus
    from dagster._utils.test.data_versions import get_stale_status_resolver

    assets = build_definitions([spec])[1]["toy"].assets
    resolver = get_stale_status_resolver(instance, [a for a in assets if isinstance(a, dg.AssetsDefinition)])
    return resolver.get_status(dg.AssetKey(["toy", "summary"]), run_id) == StaleStatus.STALE


def _materialize_only_results(spec, run_id, instance) -> None:
    """What the UI's "Materialize selected" on `results` does: that asset alone."""
    defs, _ = build_definitions([spec])
    job = defs.resolve_job_def(judge_job(spec.name))
    job.execute_in_process(instance=instance, partition_key=run_id, asset_selection=[dg.AssetKey(["toy", "results"])])


def test_results_data_version_moves_only_when_an_evaluator_changed(tmp_path, instance):
    path = write_eval(tmp_path / "toy", cases=3)
    spec = load_eval(path)
    run_id = new_run_id(spec.name)
    materialize_run(spec, run_id, instance=instance)
    first = _version(instance, "toy", "results")
    assert not _summary_is_stale(instance, load_eval(path), run_id)

    _materialize_only_results(load_eval(path), run_id, instance)  # nothing changed: nothing re-judged
    assert _version(instance, "toy", "results") == first
    assert not _summary_is_stale(instance, load_eval(path), run_id)

    path.write_text(path.read_text().replace("type: contains_text", "type: contains_text\n    config: {case_sensitive: true}"))
    _materialize_only_results(load_eval(path), run_id, instance)
    assert _version(instance, "toy", "results") != first
    assert _summary_is_stale(instance, load_eval(path), run_id)  # the UI marks the summary: upstream data changed

    materialize_reevaluation(load_eval(path), run_id, instance=instance)  # results, summary and drift
    assert not _summary_is_stale(instance, load_eval(path), run_id)


def test_traces_data_version_moves_when_a_resume_appends_traces(tmp_path, instance):
    spec = load_eval(write_eval(tmp_path / "toy", cases=4))
    run_id = new_run_id(spec.name)
    outcome = materialize_run(spec, run_id, instance=instance)
    first = _version(instance, "toy", "traces")
    lines = outcome.run_dir.traces.read_text().splitlines(keepends=True)
    outcome.run_dir.traces.write_text("".join(lines[:5]))  # a killed run: three cells lost

    materialize_run(spec, run_id, instance=instance)

    assert _version(instance, "toy", "traces") != first
    assert len(outcome.run_dir.traces.read_text().splitlines()) == 8


def test_a_run_hashes_the_traces_it_wrote_only_through_their_appender(tmp_path, instance, monkeypatch):
    from evalh_pipeline.queries import cell_store
    from evalh_pipeline.runner import evaluation
    from evalh_pipeline.runner.hashes import content_hash
    from evalh_pipeline.store import jsonl

    read: list[str] = []
    digest_of = jsonl.complete_lines_digest

    def reading(path):
        read.append(path.name)
        return digest_of(path)

    for module in (jsonl, evaluation, cell_store):
        monkeypatch.setattr(module, "complete_lines_digest", reading)
    spec = load_eval(write_eval(tmp_path / "toy", cases=5))
    run_id = new_run_id(spec.name)

    outcome = materialize_run(spec, run_id, instance=instance)

    # The traces, results and summary stages and the traces' data version took the digest
    # the appender kept: the file was never read again to hash it, and the digest is right.
    assert "traces.jsonl" not in read
    traces = outcome.run_dir.traces
    assert _version(instance, "toy", "traces").endswith(content_hash(digest_of(traces)))
    # Another launch (here: a re-evaluation) did not write them: it hashes their content.
    materialize_reevaluation(spec, run_id, instance=instance)
    assert "traces.jsonl" in read
