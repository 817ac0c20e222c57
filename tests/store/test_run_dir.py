"""Run directories: sortable unique ids, atomic writes, staging that publishes or vanishes."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
import yaml

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.common.masking import MASK
from evalh_pipeline.store.run_dir import (
    RUN_ID_PATTERN,
    config_hash,
    new_run_id,
    run_directory,
    staged_run_directory,
    write_atomic,
    write_run_header,
)


def test_new_run_id_is_timestamp_then_eval_name():
    now = datetime(2026, 5, 3, 10, 30, 0, 42, tzinfo=timezone.utc)
    assert new_run_id("my_eval", now) == "2026-05-03T10-30-00-000042_my_eval"
    assert RUN_ID_PATTERN.match(new_run_id("my_eval"))


def test_new_run_ids_sort_in_time_order():
    start = datetime(2026, 1, 9, 23, 59, 59, 999999, tzinfo=timezone.utc)
    times = [start + timedelta(microseconds=n) for n in (0, 1, 10, 1_000_001, 86_400_000_000)]
    run_ids = [new_run_id("e", t) for t in times]
    assert sorted(run_ids) == run_ids


def test_two_consecutive_run_ids_are_unique():
    assert new_run_id("e") != new_run_id("e")


def test_run_directory_rejects_ids_that_are_not_run_ids(toy_eval):
    spec = load_eval(toy_eval)
    with pytest.raises(ValueError, match="invalid run id"):
        run_directory(spec, "../escape")


def test_write_atomic_writes_and_replaces_leaving_no_temp_files(tmp_path):
    target = tmp_path / "sub" / "summary.yaml"
    write_atomic(target, "first\n")
    write_atomic(target, "second\n")
    assert target.read_text() == "second\n"
    assert [p.name for p in target.parent.iterdir()] == ["summary.yaml"]


def test_write_atomic_failure_keeps_the_old_file_and_removes_the_temp_file(tmp_path):
    target = tmp_path / "report.md"
    target.write_text("old\n")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(target, "bad \ud800 surrogate")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_staged_run_directory_publishes_on_success(toy_eval):
    spec = load_eval(toy_eval)
    run_id = new_run_id(spec.name)
    with staged_run_directory(spec, run_id) as staging:
        assert staging.path.name.startswith(".staging-")
        write_atomic(staging.cases, "{}\n")
        assert not run_directory(spec, run_id).path.exists()
    final = run_directory(spec, run_id)
    assert final.cases.read_text() == "{}\n"
    assert [p.name for p in final.path.parent.iterdir()] == [run_id]


def test_staged_run_directory_leaves_nothing_when_the_block_raises(toy_eval):
    spec = load_eval(toy_eval)
    run_id = new_run_id(spec.name)
    with pytest.raises(RuntimeError, match="bad row"):
        with staged_run_directory(spec, run_id) as staging:
            write_atomic(staging.cases, "{}\n")
            raise RuntimeError("bad row")
    assert list(run_directory(spec, run_id).path.parent.iterdir()) == []


def test_staged_run_directory_never_reuses_a_published_run_id(toy_eval):
    spec = load_eval(toy_eval)
    run_id = new_run_id(spec.name)
    with staged_run_directory(spec, run_id) as staging:
        write_atomic(staging.cases, "first\n")
    with pytest.raises(OSError):
        with staged_run_directory(spec, run_id) as staging:
            write_atomic(staging.cases, "second\n")
    final = run_directory(spec, run_id)
    assert final.cases.read_text() == "first\n"
    assert [p.name for p in final.path.parent.iterdir()] == [run_id]


def test_run_header_masks_secrets_and_hashes_the_masked_config(toy_eval, tmp_path):
    text = toy_eval.read_text().replace("eval:\n", "metadata:\n  endpoint: https://x/${MY_TOKEN}\n  api_key: raw-key-value\neval:\n", 1)
    toy_eval.write_text(text)
    spec = load_eval(toy_eval, env={"MY_TOKEN": "tok-999"})
    run_id = new_run_id(spec.name)
    with staged_run_directory(spec, run_id) as staging:
        digest = write_run_header(staging, spec, run_id)
    final = run_directory(spec, run_id)
    written = final.config_yaml.read_text()
    assert "tok-999" not in written and "raw-key-value" not in written
    masked = yaml.safe_load(written)
    assert masked["metadata"] == {"endpoint": f"https://x/{MASK}", "api_key": MASK}
    assert final.read_config_hash() == digest == config_hash(masked)
    assert final.read_meta()["variants"] == ["base", "candidate"]


def test_a_run_leaves_only_files_its_run_directory_names(toy_eval):
    import asyncio

    from evalh_pipeline.runner.loading import load_eval
    from evalh_pipeline.runner.evaluation import evaluate_traces
    from evalh_pipeline.runner.stages import prepare_cases, write_summary
    from evalh_pipeline.runner.traces import produce_traces
    from evalh_pipeline.store.run_dir import new_run_id

    spec = load_eval(toy_eval)
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir, ["base"]))  # a partial pass, then the rest
    asyncio.run(evaluate_traces(spec, run_dir))
    write_summary(spec, run_dir)
    named = {p.name for p in (run_dir.meta, run_dir.config_yaml, run_dir.config_hash_txt, run_dir.cases,
                              run_dir.traces, run_dir.results, run_dir.summary, run_dir.report, run_dir.drift,
                              run_dir.drift_report, run_dir.artifacts, run_dir.publish_log, run_dir.lock,
                              run_dir.results_store, run_dir.publish_state, run_dir.cells_cache,
                              run_dir.stores_lock, run_dir.stores_state, run_dir.last_evaluation, run_dir.reuse_record)}
    left = {p.name for p in run_dir.path.iterdir()}
    assert left <= named, left - named
    assert not [p for p in run_dir.path.iterdir() if p.name.endswith(".tmp")]  # no temp file outlives its write
    store = {p.name for p in run_dir.results_store.iterdir()}
    assert len(store) == 1 + len(spec.config.evaluators)  # store.json and one file per evaluator


def test_a_killed_writers_temp_files_are_removed_by_the_next_writer_of_the_run(toy_eval):
    import asyncio

    from evalh_pipeline.runner.evaluation import evaluate_traces
    from evalh_pipeline.runner.loading import load_eval
    from evalh_pipeline.runner.stages import prepare_cases, write_summary
    from evalh_pipeline.runner.traces import produce_traces
    from evalh_pipeline.store.run_dir import new_run_id

    spec = load_eval(toy_eval)
    run_dir = prepare_cases(spec, new_run_id(spec.name)).run_dir
    asyncio.run(produce_traces(spec, run_dir))
    asyncio.run(evaluate_traces(spec, run_dir))
    # What a re-evaluate (and a summary) killed mid-write leaves behind (issue 25 item 13).
    leftovers = [run_dir.temp_file("results"), run_dir.temp_file("results.merge"),
                 run_dir.temp_file("results", run_dir.results_store), run_dir.temp_file("cells")]
    other = run_dir.temp_file("traces.retry")  # not the evaluation's: left to its own writer
    asyncio.run(evaluate_traces(spec, run_dir))
    write_summary(spec, run_dir)
    assert not [p for p in leftovers if p.exists()]
    assert other.exists()
