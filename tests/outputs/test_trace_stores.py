"""The SQLite and PostgreSQL trace stores, with the same tests against each (a real server for PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.runner.evaluation import evaluate_traces
from evalh_pipeline.runner.stages import prepare_cases, write_summary
from evalh_pipeline.runner.traces import produce_traces
from evalh_pipeline.store.run_dir import RunDirectory, new_run_id
from evalh_pipeline.outputs.stores.base import StoreContext, StoreError
from evalh_pipeline.outputs.registry import STORES
from tests.support.evals import write_eval
from tests.postgres_server import fresh_schema
from tests.same_stat import rewrite_keeping_stat


@pytest.fixture(params=["sqlite", "postgres"])
def store_entry(request, tmp_path):
    """The config of an empty store of each kind (`run_namespace` added by the test)."""
    if request.param == "sqlite":
        return {"type": "sqlite", "path": str(tmp_path / "runs.db")}
    dsn = request.getfixturevalue("postgres_dsn")
    return {"type": "postgres", "dsn": dsn, "schema": fresh_schema()}


def open_store(entry, tmp_path, **namespace):
    config = {**entry, "run_namespace": namespace} if namespace else dict(entry)
    return STORES.get(config["type"])(config, StoreContext(eval_dir=tmp_path))


def make_run(tmp_path, name="toy", cases=4) -> RunDirectory:
    """A real run directory: cases, traces, results and summary by the engine's stages."""
    spec = load_eval(write_eval(tmp_path / name, cases=cases))
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    asyncio.run(evaluate_traces(spec, info.run_dir))
    write_summary(spec, info.run_dir)
    return info.run_dir


def lines(path):
    return sorted(json.loads(line) for line in path.read_text().splitlines()) if path.exists() else []


def records(path):
    return sorted((json.loads(line) for line in path.read_text().splitlines()),
                  key=lambda r: json.dumps(r, sort_keys=True))


def test_a_run_written_to_a_store_reads_back_as_the_same_run(store_entry, tmp_path):
    run = make_run(tmp_path)
    store = open_store(store_entry, tmp_path, project="a")
    store.write_run(run, "summary")

    back = _assert_exported_as(store, run, tmp_path)
    for name in ("cases.jsonl", "config.yaml", "config_hash.txt", "summary.yaml", "report.md"):
        assert (back / name).read_text() == (run.path / name).read_text(), name
    meta = json.loads((back / "run.json").read_text())
    assert meta["run_id"] == run.run_id and meta["store"]["namespace"] == {"project": "a"}


def test_syncing_again_writes_no_row_twice(store_entry, tmp_path):
    run = make_run(tmp_path)
    store = open_store(store_entry, tmp_path)
    for stage in ("traces", "results", "summary", "summary"):
        store.write_run(run, stage)
    (listed,) = store.list_runs()
    store.close()
    assert (listed.traces, listed.results) == (8, 16)  # 4 cases x 2 variants, x 2 evaluators


def _assert_exported_as(store, run, tmp_path):
    """The store, exported and closed, holds exactly ``run``'s traces and results as they are now;
    the export's folder."""
    back = tmp_path / "back"
    store.export_run(run.run_id, back)
    store.close()
    assert records(back / "results.jsonl") == records(run.results)
    assert records(back / "traces.jsonl") == records(run.traces)
    return back


def test_a_store_follows_records_the_run_directory_replaced(store_entry, tmp_path):
    run = make_run(tmp_path)
    store = open_store(store_entry, tmp_path)
    store.write_run(run, "results")
    # Re-evaluation replaces results whole; retry-failed drops a trace before running it again.
    kept = [line for line in run.results.read_text().splitlines() if json.loads(line)["evaluator"] != "used_lookup"]
    run.results.write_text("".join(line + "\n" for line in kept))
    traces = run.traces.read_text().splitlines()
    first = json.loads(traces[0])
    first["output"]["final_answer"] = "a new answer"
    run.traces.write_text("".join(line + "\n" for line in [json.dumps(first), *traces[2:]]))
    store.write_run(run, "results")

    _assert_exported_as(store, run, tmp_path)



def test_a_store_follows_a_run_file_rewritten_with_its_size_and_mtime_kept(store_entry, tmp_path):
    # A hand edit (or a copy preserving times) of traces.jsonl and results.jsonl in place: same
    # size, same mtime, same inode. The store must still take the new content.
    run = make_run(tmp_path)
    store = open_store(store_entry, tmp_path)
    store.write_run(run, "summary")
    rewrite_keeping_stat(run.results, b'"score":1.0', b'"score":0.5')
    rewrite_keeping_stat(run.traces, b'"final_answer":"answer 0 Paris"', b'"final_answer":"answer 0 Rome!"')
    store.write_run(run, "summary")

    _assert_exported_as(store, run, tmp_path)


def test_a_run_folder_copied_elsewhere_and_edited_syncs_its_own_content(store_entry, tmp_path):
    # The copy keeps every file's mtime and the store state file; its results are then edited
    # in place. Whatever the copy's stat says, the store ends with the copy's content.
    import shutil

    run = make_run(tmp_path)
    store = open_store(store_entry, tmp_path)
    store.write_run(run, "summary")
    moved = RunDirectory(tmp_path / "elsewhere" / run.run_id)
    shutil.copytree(run.path, moved.path)
    rewrite_keeping_stat(moved.results, b'"passed":true', b'"passed":null')
    store.write_run(moved, "summary")

    back = tmp_path / "back"
    store.export_run(run.run_id, back)
    store.close()
    assert records(back / "results.jsonl") == records(moved.results) != records(run.results)


def test_a_namespace_filter_returns_only_its_runs(store_entry, tmp_path):
    run_a, run_b = make_run(tmp_path, "alpha"), make_run(tmp_path, "beta")
    store_a = open_store(store_entry, tmp_path, project="a", branch="main")
    store_b = open_store(store_entry, tmp_path, project="b", branch="main")
    store_a.write_run(run_a, "summary")
    store_b.write_run(run_b, "summary")

    reader = open_store(store_entry, tmp_path)
    assert [r.run_id for r in reader.list_runs({"project": "a"})] == [run_a.run_id]
    assert [r.run_id for r in reader.list_runs({"project": "b", "branch": "main"})] == [run_b.run_id]
    assert [r.run_id for r in reader.list_runs({"branch": "main"})] == sorted([run_a.run_id, run_b.run_id])
    assert reader.list_runs({"project": "c"}) == []
    assert len(reader.list_runs()) == 2  # isolation is opt-in
    with pytest.raises(LookupError, match="no run"):
        reader.export_run(run_a.run_id, tmp_path / "x", {"project": "b"})
    for store in (store_a, store_b, reader):
        store.close()


def test_a_run_cannot_change_namespace(store_entry, tmp_path):
    run = make_run(tmp_path)
    store = open_store(store_entry, tmp_path, project="a")
    store.write_run(run, "summary")
    store.close()
    other = open_store(store_entry, tmp_path, project="b")
    with pytest.raises(StoreError, match="already in this store under namespace"):
        other.write_run(run, "summary")
    other.close()


def test_the_promoted_baseline_is_kept_per_eval_and_namespace(store_entry, tmp_path):
    store_a = open_store(store_entry, tmp_path, project="a")
    store_b = open_store(store_entry, tmp_path, project="b")
    store_a.record_baseline("toy", "run-1", "2026-01-01T00:00:00+00:00")
    store_a.record_baseline("toy", "run-2", "2026-01-02T00:00:00+00:00")
    store_b.record_baseline("toy", "run-9", "2026-01-03T00:00:00+00:00")
    assert store_a.current_baseline("toy", {"project": "a"}) == "run-2"
    assert store_a.current_baseline("toy", {"project": "b"}) == "run-9"
    assert store_a.current_baseline("other", {"project": "a"}) is None
    store_a.close()
    store_b.close()


# The v0.1 shape of a SQLite store: eval-harness's tables before namespaces existed.
V01_SCHEMA = """
CREATE TABLE traces (run_id TEXT NOT NULL, case_id TEXT NOT NULL, variant_name TEXT NOT NULL,
    started_at TEXT NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (run_id, case_id, variant_name));
CREATE TABLE results (run_id TEXT NOT NULL, case_id TEXT NOT NULL, variant_name TEXT NOT NULL,
    evaluator TEXT NOT NULL, started_at TEXT NOT NULL, payload TEXT NOT NULL,
    PRIMARY KEY (run_id, case_id, variant_name, evaluator));
CREATE TABLE artifacts (run_id TEXT NOT NULL, case_id TEXT NOT NULL, variant_name TEXT NOT NULL,
    payload TEXT NOT NULL, PRIMARY KEY (run_id, case_id, variant_name));
CREATE TABLE summaries (run_id TEXT PRIMARY KEY, started_at TEXT NOT NULL, payload TEXT NOT NULL);
"""


def _v01_file(path, run: RunDirectory) -> None:
    db = sqlite3.connect(path)
    db.executescript(V01_SCHEMA)
    for line in run.traces.read_text().splitlines():
        t = json.loads(line)
        db.execute("INSERT INTO traces VALUES (?, ?, ?, ?, ?)",
                   ("old-run", t["case_id"], t["variant_name"], t["started_at"], line.replace(run.run_id, "old-run")))
    for line in run.results.read_text().splitlines():
        r = json.loads(line)
        db.execute("INSERT INTO results VALUES (?, ?, ?, ?, ?, ?)", ("old-run", r["case_id"], r["variant_name"],
                   r["evaluator"], r["started_at"], line.replace(run.run_id, "old-run")))
    db.commit()
    db.close()


def test_a_v01_sqlite_file_is_migrated_in_place_and_keeps_its_rows(tmp_path):
    old = make_run(tmp_path, "old")
    path = tmp_path / "v01.db"
    _v01_file(path, old)

    store = open_store({"type": "sqlite", "path": str(path)}, tmp_path, project="a")
    new = make_run(tmp_path, "new")
    store.write_run(new, "summary")
    runs = {r.run_id: r for r in store.list_runs()}
    back = tmp_path / "back"
    store.export_run("old-run", back)
    store.close()

    db = sqlite3.connect(path)
    columns = {row[1] for row in db.execute("PRAGMA table_info(traces)")}
    assert {"namespace", "sample", "digest"} <= columns
    assert db.execute("SELECT count(*) FROM traces WHERE run_id = 'old-run' AND namespace IS NULL").fetchone() == (8,)
    assert db.execute("SELECT count(*) FROM results WHERE run_id = 'old-run'").fetchone() == (16,)
    assert db.execute("SELECT DISTINCT namespace FROM traces WHERE run_id = ?", (new.run_id,)).fetchall() == [
        ('{"project":"a"}',)]
    db.close()
    # The old rows stay readable: unfiltered, and not under a namespace they never had.
    assert runs["old-run"].traces == 8 and runs["old-run"].namespace is None
    assert len(records(back / "traces.jsonl")) == 8
    reopened = open_store({"type": "sqlite", "path": str(path)}, tmp_path)
    assert [r.run_id for r in reopened.list_runs({"project": "a"})] == [new.run_id]
    reopened.close()


def test_postgres_indexes_the_namespace(postgres_dsn, tmp_path):
    import psycopg

    entry = {"type": "postgres", "dsn": postgres_dsn, "schema": fresh_schema()}
    store = open_store(entry, tmp_path, project="a")
    store.list_runs()  # opens and creates the tables
    store.close()
    with psycopg.connect(postgres_dsn) as conn:
        indexes = {name: sql for name, sql in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s", [entry["schema"]])}
    for table in ("runs", "traces", "results"):
        assert "gin (namespace jsonb_path_ops)" in indexes[f"evalh_{table}_namespace"].lower()


def test_an_unreachable_postgres_is_a_store_error_without_the_password(tmp_path):
    entry = {"type": "postgres", "dsn": "postgresql://evalh:hunter2@127.0.0.1:1/evals", "connect_timeout_seconds": 1}
    store = open_store(entry, tmp_path)
    with pytest.raises(StoreError) as raised:
        store.list_runs()
    assert "hunter2" not in str(raised.value) and "***" in str(raised.value)


WRITER = '''
from pathlib import Path

def run(case, variant):
    Path(variant["_workspace_path"], "out.txt").write_text(case["id"] + "\\\\n")
    return {"final_answer": case["input"]["answer"]}
'''


def test_a_workspace_run_reads_back_with_its_artifact_records(store_entry, tmp_path, monkeypatch):
    from evalh_pipeline.queries.inspect import inspect_run

    systems = "\n  - name: base\n    adapter: python_function\n    target: writer_agent:run\n"
    path = write_eval(tmp_path / "ws", cases=2, systems=systems,
                      extra_yaml=f"workspace:\n  type: tempdir_snapshot\n  base_path: {tmp_path / 'wsroot'}\n")
    (tmp_path / "ws" / "writer_agent.py").write_text(WRITER)
    monkeypatch.syspath_prepend(str(tmp_path / "ws"))
    path.write_text(path.read_text().replace("baseline_variant: base", "baseline_variant: base"))
    spec = load_eval(path)
    info = prepare_cases(spec, new_run_id(spec.name))
    asyncio.run(produce_traces(spec, info.run_dir))
    store = open_store(store_entry, tmp_path)
    store.write_run(info.run_dir, "traces")
    back = tmp_path / "back"
    store.export_run(info.run_dir.run_id, back)
    store.close()

    cells = inspect_run(RunDirectory(back), case_id="case_1").cells
    assert cells[0].artifact["diff"]["added"] == ["out.txt"]


@pytest.mark.parametrize("key, value", [
    ('team "core"', "it's $.x"), ("a.b", "ünïcode ✓"), ("$", "1 OR 1=1"), ("proj", '{"nested": true}'),
])
def test_hostile_namespace_keys_and_values_filter_exactly(store_entry, tmp_path, key, value):
    run = make_run(tmp_path, cases=1)
    store = open_store(store_entry, tmp_path, **{key: value})
    store.write_run(run, "summary")
    assert [r.run_id for r in store.list_runs({key: value})] == [run.run_id]
    assert store.list_runs({key: value + "x"}) == []
    assert store.list_runs({key + "x": value}) == []
    store.close()


def test_a_postgres_role_without_ddl_rights_uses_tables_made_by_their_owner(postgres_dsn, tmp_path):
    import psycopg

    schema = fresh_schema()
    owner = open_store({"type": "postgres", "dsn": postgres_dsn, "schema": schema}, tmp_path)
    owner.list_runs()  # creates the tables
    owner.close()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute("DROP ROLE IF EXISTS evalh_writer")
        conn.execute("CREATE ROLE evalh_writer LOGIN")
        conn.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO evalh_writer')
        conn.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" TO evalh_writer')
    writer_dsn = postgres_dsn.replace("user=postgres", "user=evalh_writer")
    run = make_run(tmp_path, cases=1)
    writer = open_store({"type": "postgres", "dsn": writer_dsn, "schema": schema}, tmp_path, project="a")
    writer.write_run(run, "summary")
    assert [r.run_id for r in writer.list_runs({"project": "a"})] == [run.run_id]
    writer.close()
