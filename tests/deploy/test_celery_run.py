"""One eval run on the team deployment: `evalh run` with run.executor {type: celery} hands
the steps to a celery worker (as if on its own machine, sharing no path with the launcher;
one machine at a time, see the first test), the instance in PostgreSQL,
the broker a redis-server, the run folder an s3:// URL on moto's S3 server; the run's files
in S3 give the summary an in-process run gives."""

from __future__ import annotations

import os
import uuid
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml

from tests.support.deployment import with_outputs
from tests.support.evalh_process import run_evalh
from tests.support.evals import write_eval
from tests.support.deployment import TEAM_YAML, team_home
from tests.support.celery_workers import celery_worker, celery_workers

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

STAGES = ("cases", "traces", "results", "summary", "drift")
# Each stage's step; traces is a graph of steps (runner/shards.py): its one shard stands for it.
TRACES_STEP = "toy__traces.toy__traces_shard[shard_1_of_1]"
STEPS = {f"toy__{stage}" for stage in STAGES if stage != "traces"} | {TRACES_STEP}


def summary_rates(fs, run_url: str) -> dict:
    summary = yaml.safe_load(fs.cat(f"{run_url}/summary.yaml"))
    return {v["name"]: (v["cases_passed"], v["cases_total"]) for v in summary["variants"]}


def test_an_eval_run_executes_its_steps_on_celery_workers_and_publishes_to_s3(
        tmp_path, env, team_postgres, redis_url, s3_server, monkeypatch):
    import dagster as dg

    bucket = s3_server.make_bucket(f"team-{uuid.uuid4().hex[:8]}")
    evals = tmp_path / "evals"
    path = with_outputs(write_eval(evals / "toy", cases=6), f"{bucket}/runs")
    path.write_text(path.read_text().replace("  max_concurrency: 4\n",
                                             "  max_concurrency: 4\n  executor: {type: celery}\n"))
    # What every machine has: the instance, the broker, the bucket and the code (the evals folder).
    shared = {**env, **team_postgres, **s3_server.env(), "EVALH_CELERY_BROKER": redis_url,
              "EVALH_EVALS_DIR": str(evals)}
    launcher = {**shared, "DAGSTER_HOME": str(team_home(tmp_path)), "EVALH_CACHE_DIR": str(tmp_path / "launcher")}
    fs = s3_server.filesystem()

    # One worker: the values Dagster passes between a run's steps (the shard plan, each shard's
    # counts) stay in the DAGSTER_HOME of the machine that made them (deploy/dagster.yaml), so
    # two machines cannot yet share one run's steps (a known gap: docs/deployment.md).
    with celery_workers(1, redis_url, shared, TEAM_YAML) as workers:
        done = run_evalh(["run", str(path)], launcher, tmp_path, timeout=600)
        assert done.returncode == 0, done.stderr + "".join(w.log.read_text()[-3000:] for w in workers)
        worker_pids = {w.proc.pid for w in workers}
        launcher_files = {p.relative_to(launcher["DAGSTER_HOME"]) for p in Path(launcher["DAGSTER_HOME"]).rglob("*")}
        worker_logs = [sorted(p.name for p in (w.folder / "dagster_home").rglob("*.out")) for w in workers]

    [run_dir] = fs.ls(f"{bucket}/runs")
    run_url = f"s3://{run_dir}"
    for name, value in {**team_postgres, "DAGSTER_HOME": launcher["DAGSTER_HOME"]}.items():
        monkeypatch.setenv(name, value)
    with dg.DagsterInstance.from_config(launcher["DAGSTER_HOME"]) as instance:
        [run] = instance.get_runs()
        failures = [str(r.dagster_event.event_specific_data.error)[:3000] for r in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE)]
        assert run.status == dg.DagsterRunStatus.SUCCESS, failures
        starts = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_START)
        ran_in = {record.step_key: record.dagster_event.pid for record in starts}
    assert set(ran_in) >= STEPS
    assert set(ran_in.values()) <= worker_pids  # no step ran in the launcher (`evalh run`)
    # Each machine writes its own folder: the steps' logs are on the workers, none in the launcher's.
    assert sum(map(len, worker_logs)) >= len(STAGES) and not [f for f in launcher_files if f.suffix == ".out"]

    # The same eval in process, to a folder: the same verdicts.
    local = write_eval(tmp_path / "local" / "toy", cases=6)
    alone = run_evalh(["run", str(local)], env, tmp_path)
    assert alone.returncode == 0, alone.stderr
    [local_run] = (tmp_path / "local" / "toy" / "runs").iterdir()
    expected = yaml.safe_load((local_run / "summary.yaml").read_text())
    assert summary_rates(fs, run_url) == {v["name"]: (v["cases_passed"], v["cases_total"]) for v in expected["variants"]}


def step_pid(instance, step_key: str) -> int | None:
    """The process that started ``step_key`` in any run of the instance (None: not started yet)."""
    import dagster as dg

    for run in instance.get_runs():
        for record in instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_START):
            if record.step_key == step_key:
                return record.dagster_event.pid
    return None


def test_a_worker_killed_mid_step_and_the_run_resumed_from_its_url_leaves_every_cell_once(
        tmp_path, env, team_postgres, redis_url, s3_server, monkeypatch):
    import json
    import signal
    import subprocess
    import time

    import dagster as dg

    from tests.support.evalh_process import EVALH

    bucket = s3_server.make_bucket(f"team-{uuid.uuid4().hex[:8]}")
    evals = tmp_path / "evals"
    path = with_outputs(write_eval(evals / "toy", cases=6), f"{bucket}/runs")
    # Cells from case 2 on wait for the gate file: the traces step is mid-way when its worker dies.
    path.write_text(path.read_text().replace("  max_concurrency: 4\n", "  max_concurrency: 4\n  executor: {type: celery}\n")
                    .replace("    target: stub_agent:run\n", "    target: stub_agent:run\n    hold_from: 2\n"))
    gate, calls = tmp_path / "gate", tmp_path / "calls.log"
    shared = {**env, **team_postgres, **s3_server.env(), "EVALH_CELERY_BROKER": redis_url,
              "EVALH_EVALS_DIR": str(evals), "EVALH_TEST_GATE": str(gate)}
    launcher = {**shared, "DAGSTER_HOME": str(team_home(tmp_path)), "EVALH_CACHE_DIR": str(tmp_path / "launcher")}
    for name, value in {**team_postgres, "DAGSTER_HOME": launcher["DAGSTER_HOME"]}.items():
        monkeypatch.setenv(name, value)
    fs = s3_server.filesystem()

    with ExitStack() as machines:
        # One machine at a time (see the first test): a fresh one takes over once the first is lost.
        workers = machines.enter_context(celery_workers(1, redis_url, shared, TEAM_YAML))
        first = subprocess.Popen([*EVALH, "run", str(path)], env=launcher, cwd=tmp_path, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            with dg.DagsterInstance.from_config(launcher["DAGSTER_HOME"]) as instance:
                deadline = time.monotonic() + 300
                while (pid := step_pid(instance, TRACES_STEP)) is None or not calls.exists():
                    assert first.poll() is None and time.monotonic() < deadline, first.stderr.read() if first.poll() else ""
                    time.sleep(0.2)
            [lost] = [w for w in workers if w.proc.pid == pid]
            lost.kill()  # a machine lost mid-step: nothing of the step was published
            machines.enter_context(celery_worker("w2", redis_url, shared, TEAM_YAML))
            # Its coordinator waits for a step that will never answer: the launcher is stopped too.
            os.killpg(first.pid, signal.SIGTERM)
            first.communicate(timeout=120)
        finally:
            if first.poll() is None:
                os.killpg(first.pid, signal.SIGKILL)
                first.communicate()
        [run_dir] = fs.ls(f"{bucket}/runs")
        run_url = f"s3://{run_dir}"
        assert not fs.exists(f"{run_url}/traces.jsonl")

        gate.write_text("")
        resumed = run_evalh(["run", str(path), "--resume", run_url], launcher, tmp_path, timeout=600)
        assert resumed.returncode == 0, resumed.stderr

    traces = [json.loads(line) for line in fs.cat(f"{run_url}/traces.jsonl").decode().splitlines()]
    cells = [(t["case_id"], t["variant_name"]) for t in traces]
    assert len(cells) == len(set(cells)) == 12  # every cell of 6 cases x 2 variants, exactly once
    summary = yaml.safe_load(fs.cat(f"{run_url}/summary.yaml"))
    assert summary["completeness"]["complete"] is True
