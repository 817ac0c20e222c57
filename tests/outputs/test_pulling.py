"""RunPublisher.pull: a working copy brought up to date with its s3:// canonical copy, as a
stage on another machine starts (moto's S3 server on loopback)."""

from __future__ import annotations

import uuid

import pytest

from evalh_pipeline.outputs.publishing import RunPublisher, fetch_run, working_copy, working_root
from evalh_pipeline.store.run_dir import RunDirectory

pytestmark = pytest.mark.integration


def test_a_second_machine_takes_what_the_first_published_and_sends_nothing_back(tmp_path, s3_server, monkeypatch):
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    output = f"{s3_server.make_bucket(f'pull-{uuid.uuid4().hex[:8]}')}/runs"
    a = RunDirectory(working_root(output, tmp_path / "a") / "r1")
    a.path.mkdir(parents=True)
    (a.path / "run.json").write_text('{"run_id": "r1"}\n')
    (a.path / "traces.jsonl").write_text('{"cell": 1}\n')
    (a.path / "results.jsonl").write_text('{"result": 1}\n')
    publisher = RunPublisher(output)
    publisher.publish(a, "traces")
    assert publisher.pull(a) == 0  # what A put there is no news to A

    b_path = working_copy(f"{output}/r1", tmp_path / "b")
    b = RunDirectory(b_path)
    assert b_path == working_root(output, tmp_path / "b") / "r1"
    assert (b.path / "traces.jsonl").read_text() == '{"cell": 1}\n'
    assert publisher.publish(b, "traces").uploaded == {}  # what it fetched counts as published
    assert publisher.pull(b) == 0  # nothing changed since

    # B judges again (its results store and results.jsonl) and publishes; A, stale, pulls.
    b.results_store.mkdir()
    (b.results_store / "store.json").write_text("{}\n")
    (b.path / "results.jsonl").write_text('{"result": 2}\n')
    publisher.publish(b, "results")
    assert publisher.pull(b) == 0
    a.results_store.mkdir()
    (a.results_store / "store.json").write_text('{"stale": true}\n')
    assert publisher.pull(a) == 1
    assert (a.path / "results.jsonl").read_text() == '{"result": 2}\n'
    assert not a.results_store.exists()  # read from results.jsonl now, not from A's stale store


def test_a_url_that_holds_no_run_is_no_working_copy(tmp_path, s3_server, monkeypatch):
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    output = f"{s3_server.make_bucket(f'pull-{uuid.uuid4().hex[:8]}')}/runs"
    with pytest.raises(FileNotFoundError, match="is not a run directory"):
        working_copy(f"{output}/missing", tmp_path)


def test_a_key_that_climbs_out_of_the_run_is_never_fetched(tmp_path, s3_server, monkeypatch):
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    output = f"{s3_server.make_bucket(f'pull-{uuid.uuid4().hex[:8]}')}/runs"
    fs = s3_server.filesystem()
    fs.pipe(f"{output}/r1/run.json", b'{"run_id": "r1"}\n')
    # S3 keeps such keys as they are; the publisher never writes them, someone else could.
    fs.pipe(f"{output}/r1/../../planted.txt", b"outside")
    fs.pipe(f"{output}/r1/a//b.txt", b"empty part")

    copies = [working_copy(f"{output}/r1", tmp_path / "b"), fetch_run(f"{output}/r1", tmp_path / "c")]
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()
                  and not p.name.startswith(".")) == sorted(f"{c.relative_to(tmp_path).as_posix()}/run.json"
                                                            for c in copies)


def test_a_shard_step_never_publishes_a_stale_part_of_another_shard(tmp_path, s3_server, monkeypatch):
    # Machine A ran shard 1 until it was killed: its partial part stayed in A's copy. Shard 1
    # ran again on B and published its whole part; A's later step of shard 2 must not put A's
    # stale part of shard 1 back over it (defs/evals/assets.py ``_share_with_steps``).
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    output = f"{s3_server.make_bucket(f'parts-{uuid.uuid4().hex[:8]}')}/runs"
    publisher = RunPublisher(output)
    a = RunDirectory(working_root(output, tmp_path / "a") / "r1")
    (a.path / "shards").mkdir(parents=True)
    (a.path / "run.json").write_text('{"run_id": "r1"}\n')
    (a.path / "shards" / "traces.1-of-2.jsonl").write_text('{"cell": 1}\n')  # partial
    b = RunDirectory(working_root(output, tmp_path / "b") / "r1")
    (b.path / "shards").mkdir(parents=True)
    (b.path / "run.json").write_text('{"run_id": "r1"}\n')
    whole = '{"cell": 1}\n{"cell": 3}\n'
    (b.path / "shards" / "traces.1-of-2.jsonl").write_text(whole)
    publisher.publish(b, "traces", skip=lambda relative: relative.startswith("shards/")
                      and not relative.startswith("shards/traces.1-of-2"))

    (a.path / "shards" / "traces.2-of-2.jsonl").write_text('{"cell": 2}\n')
    report = publisher.publish(a, "traces", skip=lambda relative: relative.startswith("shards/")
                               and not relative.startswith("shards/traces.2-of-2"))
    fs = s3_server.filesystem()
    assert fs.cat(f"{output}/r1/shards/traces.1-of-2.jsonl").decode() == whole
    assert fs.cat(f"{output}/r1/shards/traces.2-of-2.jsonl").decode() == '{"cell": 2}\n'
    assert report.removed == {}


def test_a_pull_that_skips_the_records_fetches_them_on_the_next_full_pull(tmp_path, s3_server, monkeypatch):
    # The launcher of a run whose steps ran elsewhere reads only the summary (defs/launch.py):
    # the large records stay at the URL until a command that needs them pulls.
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    output = f"{s3_server.make_bucket(f'skip-{uuid.uuid4().hex[:8]}')}/runs"
    a = RunDirectory(working_root(output, tmp_path / "a") / "r1")
    a.path.mkdir(parents=True)
    (a.path / "run.json").write_text('{"run_id": "r1"}\n')
    (a.path / "traces.jsonl").write_text('{"cell": 1}\n')
    (a.path / "summary.yaml").write_text("variants: []\n")
    publisher = RunPublisher(output)
    publisher.publish(a, "summary")

    b = RunDirectory(working_root(output, tmp_path / "b") / "r1")
    assert publisher.pull(b, skip=lambda relative: relative == "traces.jsonl") == 2
    assert (b.path / "summary.yaml").read_text() == "variants: []\n"
    assert not (b.path / "traces.jsonl").exists()
    assert publisher.pull(b) == 1
    assert (b.path / "traces.jsonl").read_text() == '{"cell": 1}\n'
