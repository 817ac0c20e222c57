"""`evalh run` with output [local_files, sqlite (namespace a), postgres (namespace b)], read back by the CLI.

Real processes, a real SQLite file and a real PostgreSQL server (tests/postgres_server.py).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.evalh_process import EVALH, run_evalh

from tests.support.evals import write_eval
from tests.postgres_server import fresh_schema

pytestmark = pytest.mark.integration


def _stores_yaml(tmp_path: Path, dsn: str, schema: str) -> str:
    return f"""  - type: sqlite
    path: {tmp_path / 'runs.db'}
    run_namespace: {{project: a}}
  - type: postgres
    dsn: "{dsn}"
    schema: {schema}
    run_namespace: {{project: b}}
"""


def _set_break_every(eval_path: Path, every: int) -> None:
    text = eval_path.read_text()
    eval_path.write_text(text.replace("break_every: 3", f"break_every: {every}"))


def _compare(env, cwd, *args) -> dict:
    proc = run_evalh(["compare", *args, "--json"], env, cwd)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_runs_read_from_sqlite_and_postgres_compare_like_their_run_directories(tmp_path, env, postgres_dsn):
    schema = fresh_schema()
    path = write_eval(tmp_path / "toy", cases=6, extra_yaml=_stores_yaml(tmp_path, postgres_dsn, schema))
    env = {**env, "EVALH_CACHE_DIR": str(tmp_path / "cache")}
    first = run_evalh(["run", str(path)], env, tmp_path)
    assert first.returncode == 0, first.stderr
    _set_break_every(path, 2)  # the candidate gets worse: the second run has regressions
    second = run_evalh(["run", str(path)], env, tmp_path)
    assert second.returncode == 0, second.stderr
    assert "warning" not in first.stderr + second.stderr
    run_a, run_b = sorted(p for p in (tmp_path / "toy" / "runs").iterdir())

    from_dirs = _compare(env, tmp_path, str(run_a), str(run_b))
    sqlite_url = f"sqlite:///{tmp_path / 'runs.db'}"
    pg_url = f"{postgres_dsn}#schema={schema}"
    from_sqlite = _compare(env, tmp_path, run_a.name, run_b.name, "--store", sqlite_url, "--namespace", "project=a")
    from_pg = _compare(env, tmp_path, run_a.name, run_b.name, "--store", pg_url, "--namespace", "project=b")
    assert from_dirs["comparison"]["regressions_count"] > 0
    assert from_sqlite == from_dirs
    assert from_pg == from_dirs

    # A namespace filter returns only its runs.
    listed = run_evalh(["runs", "--store", sqlite_url, "--namespace", "project=a", "--json"], env, tmp_path)
    assert [r["run_id"] for r in json.loads(listed.stdout)] == [run_a.name, run_b.name]
    other = run_evalh(["runs", "--store", sqlite_url, "--namespace", "project=b", "--json"], env, tmp_path)
    assert json.loads(other.stdout) == []
    wrong = run_evalh(["inspect", run_a.name, "--store", pg_url, "--namespace", "project=a"], env, tmp_path)
    assert wrong.returncode == 2 and "no run" in wrong.stderr
    shown = run_evalh(["inspect", run_b.name, "--store", pg_url, "--namespace", "project=b", "--failed"], env, tmp_path)
    assert shown.returncode == 0 and f"in {run_b.name}" in shown.stdout

    # drift against a baseline promoted in the store, per namespace.
    promoted = run_evalh(["promote", run_a.name, "--store", sqlite_url, "--namespace", "project=a"], env, tmp_path)
    assert promoted.returncode == 0, promoted.stderr
    drift = run_evalh(["drift", run_b.name, "--store", sqlite_url, "--namespace", "project=a", "--json"], env, tmp_path)
    assert drift.returncode == 0, drift.stderr
    assert json.loads(drift.stdout)["comparison"]["regressions_count"] == from_dirs["comparison"]["regressions_count"]
    no_baseline = run_evalh(["drift", run_b.name, "--store", pg_url, "--namespace", "project=b"], env, tmp_path)
    assert no_baseline.returncode == 2 and "no promoted baseline" in no_baseline.stderr


def _rows_sqlite(db: Path, table: str, run_id: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(f"SELECT payload FROM {table} WHERE run_id = ?", [run_id]).fetchall()


def _rows_pg(dsn: str, schema: str, table: str, run_id: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return conn.execute(f'SELECT payload FROM "{schema}".evalh_{table} WHERE run_id = %s', [run_id]).fetchall()


def _canon(rows, key):
    out = sorted((json.loads(r[0]) if isinstance(r[0], str) else r[0] for r in rows), key=key)
    return out


def test_kill_9_during_a_run_leaves_every_store_consistent_after_resume(tmp_path, env, postgres_dsn):
    schema = fresh_schema()
    # Cases from case_3 on wait for the gate: the kill lands while the run is going.
    env = {**env, "EVALH_TEST_GATE": str(tmp_path / "gate")}
    systems = """
  - name: base
    adapter: python_function
    target: stub_agent:run
    delay: 0.25
    hold_from: 3
  - name: candidate
    adapter: python_function
    target: stub_agent:run
    delay: 0.25
    hold_from: 3
"""
    path = write_eval(tmp_path / "toy", cases=10, systems=systems,
                      extra_yaml=_stores_yaml(tmp_path, postgres_dsn, schema))
    text = path.read_text().replace("max_concurrency: 4", "max_concurrency: 2")
    path.write_text(text)
    proc = subprocess.Popen([*EVALH, "run", str(path)], env=env, cwd=tmp_path, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    runs = tmp_path / "toy" / "runs"
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            found = [p / "traces.jsonl" for p in runs.glob("*") if (p / "traces.jsonl").exists()] if runs.exists() else []
            if found and len(found[0].read_text().splitlines()) >= 4:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the run wrote no traces in time")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    (run_dir,) = runs.iterdir()
    lines_at_kill = len((run_dir / "traces.jsonl").read_text().splitlines())
    assert lines_at_kill < 20

    (tmp_path / "gate").touch()
    resumed = run_evalh(["run", str(path), "--resume", str(run_dir)], env, tmp_path, timeout=300)
    assert resumed.returncode == 0, resumed.stderr

    def key(record):
        return (record["case_id"], record["variant_name"], record.get("sample", 0), record.get("evaluator", ""))

    traces = _canon([(line,) for line in (run_dir / "traces.jsonl").read_text().splitlines()], key)
    results = _canon([(line,) for line in (run_dir / "results.jsonl").read_text().splitlines()], key)
    assert len(traces) == 20 and len({key(t) for t in traces}) == 20
    db = tmp_path / "runs.db"
    assert _canon(_rows_sqlite(db, "traces", run_dir.name), key) == traces
    assert _canon(_rows_sqlite(db, "results", run_dir.name), key) == results
    assert _canon(_rows_pg(postgres_dsn, schema, "traces", run_dir.name), key) == traces
    assert _canon(_rows_pg(postgres_dsn, schema, "results", run_dir.name), key) == results


def test_an_unreachable_store_warns_and_its_password_never_reaches_disk_or_output(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=2, extra_yaml="""  - type: postgres
    dsn: "postgresql://evalh:hunter2-pw@127.0.0.1:1/evals"
    connect_timeout_seconds: 1
  - type: sqlite
    path: runs.db
""")
    plan = run_evalh(["run", "--dry-run", str(path)], env, tmp_path)
    assert plan.returncode == 0 and "trace stores: postgresql://evalh:***@127.0.0.1:1/evals, sqlite:///" in plan.stdout
    proc = run_evalh(["run", str(path)], env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "warning:" in proc.stderr and "postgresql://evalh:***@127.0.0.1:1/evals not updated" in proc.stderr
    assert "hunter2-pw" not in proc.stdout + proc.stderr + plan.stdout + plan.stderr
    (run_dir,) = (tmp_path / "toy" / "runs").iterdir()
    for file in run_dir.rglob("*"):
        if file.is_file():
            assert b"hunter2-pw" not in file.read_bytes(), file
    # The other store took the run all the same.
    with sqlite3.connect(tmp_path / "toy" / "runs.db") as conn:
        assert conn.execute("SELECT count(*) FROM traces").fetchone() == (4,)


def test_an_unknown_output_type_is_a_config_error_listing_the_known_ones(tmp_path, env):
    path = write_eval(tmp_path / "toy", cases=2, extra_yaml="  - type: mongodb\n    path: x\n")
    proc = run_evalh(["run", str(path)], env, tmp_path)
    assert proc.returncode == 1
    said = " ".join(proc.stderr.split())  # rich wraps lines when stderr is not a terminal
    assert "output[1].type: unknown output type 'mongodb' (known: local_files, otel, postgres, sqlite, webhook)" in said
    # An unknown key of a store is what eval-harness ignores: a warning naming the closest key,
    # an error with --strict.
    bad = write_eval(tmp_path / "toy2", cases=2, extra_yaml="  - type: sqlite\n    path: x.db\n    namespace: {a: b}\n")
    proc = run_evalh(["run", "--strict", "--dry-run", str(bad)], env, tmp_path)
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 1 and "output[1].namespace: unknown key" in said and "run_namespace" in said
    proc = run_evalh(["run", "--dry-run", str(bad)], env, tmp_path)
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 0 and "warning:" in said and "did you mean 'run_namespace'?" in said


def test_two_evals_running_at_once_share_one_sqlite_file_and_one_postgres_store(tmp_path, env, postgres_dsn):
    schema = fresh_schema()
    paths = []
    for name, project in (("alpha", "a"), ("beta", "b")):
        stores = f"""  - type: sqlite
    path: {tmp_path / 'shared.db'}
    run_namespace: {{project: {project}}}
  - type: postgres
    dsn: "{postgres_dsn}"
    schema: {schema}
    run_namespace: {{project: {project}}}
"""
        paths.append(write_eval(tmp_path / name, cases=8, extra_yaml=stores))
    # Two machines: each its own Dagster instance, one SQLite file (same host) and one PostgreSQL server.
    homes = []
    for name in ("home_a", "home_b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
        homes.append({**env, "DAGSTER_HOME": str(tmp_path / name)})
    procs = [subprocess.Popen([*EVALH, "run", str(path)], env=home, cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for path, home in zip(paths, homes)]
    outcomes = [proc.communicate(timeout=300) for proc in procs]
    for proc, (_, stderr) in zip(procs, outcomes):
        assert proc.returncode == 0, stderr
        assert "warning" not in stderr, stderr
    env = {**env, "EVALH_CACHE_DIR": str(tmp_path / "cache")}
    for url in (f"sqlite:///{tmp_path / 'shared.db'}", f"{postgres_dsn}#schema={schema}"):
        listed = json.loads(run_evalh(["runs", "--store", url, "--json"], env, tmp_path).stdout)
        assert sorted((r["eval_name"], r["namespace"]["project"], r["traces"], r["results"]) for r in listed) == [
            ("alpha", "a", 16, 32), ("beta", "b", 16, 32)]
