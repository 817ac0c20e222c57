"""One eval run on the team deployment: `evalh run` with run.executor {type: celery} hands
the steps to two celery workers at once (each as if on its own machine, sharing no path
with the other or the launcher), the instance in PostgreSQL, the broker a redis-server,
the run folder an s3:// URL on moto's S3 server. The shards of one run execute on both
workers; a worker's step process killed mid-shard fails that step, and Dagster's
re-execution from failure (or `evalh run --resume`) runs only the missing cells. Every
cell is traced once, and the summary is the one an in-process run gives."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

import pytest
import yaml

from tests.support.celery_workers import celery_workers
from tests.support.deployment import TEAM_YAML, team_home, verdicts, with_outputs
from tests.support.evalh_process import EVALH, evalh_env, run_evalh
from tests.support.evals import write_eval

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

CASES = 8
SHARDS = 2
SHARD_STEPS = [f"toy__traces.toy__traces_shard[shard_{k}_of_{SHARDS}]" for k in range(1, SHARDS + 1)]
# The results stage judges in the same shards (a graph like traces'); those steps are not held
# by the gate, so either worker may take both.
RESULTS_STEPS = {"toy__results.toy__plan_results", "toy__results.toy__collect_results"} | {
    f"toy__results.toy__results_shard[shard_{k}_of_{SHARDS}]" for k in range(1, SHARDS + 1)}
STEPS = {f"toy__{stage}" for stage in ("cases", "summary", "drift")} | set(SHARD_STEPS) | RESULTS_STEPS
WAIT_S = 600.0  # a bound on waits for events, never a pace: every wait polls for what it needs


def team_eval(tmp_path: Path, bucket: str) -> Path:
    """The toy eval on celery with 2 shards, publishing to the bucket; cells from case 2 on
    wait for the gate file, so both shards are in flight before either can end."""
    path = with_outputs(write_eval(tmp_path / "evals" / "toy", cases=CASES), f"{bucket}/runs")
    path.write_text(path.read_text()
                    .replace("  max_concurrency: 4\n", f"  max_concurrency: 4\n  executor: {{type: celery}}\n"
                                                       f"  shards: {SHARDS}\n")
                    .replace("    target: stub_agent:run\n", "    target: stub_agent:run\n    hold_from: 2\n"))
    return path


def machines_env(tmp_path: Path, env: dict, team_postgres: dict, redis_url: str, s3_server) -> tuple[dict, dict]:
    """What every machine shares (instance, broker, bucket, code), and the launcher's own environment."""
    shared = {**env, **team_postgres, **s3_server.env(), "EVALH_CELERY_BROKER": redis_url,
              "EVALH_EVALS_DIR": str(tmp_path / "evals"), "EVALH_TEST_GATE": str(tmp_path / "gate"),
              "EVALH_TEST_CALL_LOG": str(tmp_path / "calls.log")}
    return shared, {**shared, "DAGSTER_HOME": str(team_home(tmp_path)), "EVALH_CACHE_DIR": str(tmp_path / "launcher")}


@pytest.fixture(scope="module")
def in_process_verdicts(tmp_path_factory) -> dict:
    """The verdicts of the same eval run in one process, to a local folder (no shards): made
    once, what every test's run on the team deployment must conclude."""
    folder = tmp_path_factory.mktemp("in_process")
    local = write_eval(folder / "local" / "toy", cases=CASES)
    done = run_evalh(["run", str(local)], evalh_env(folder), folder)
    assert done.returncode == 0, done.stderr
    [run_dir] = (folder / "local" / "toy" / "runs").iterdir()
    return verdicts(yaml.safe_load((run_dir / "summary.yaml").read_text()))


def step_pids(instance, run_id: str, event: str = "STEP_START") -> dict[str, int]:
    """Step key -> the process that recorded ``event`` for it in the Dagster run."""
    import dagster as dg

    kind = dg.DagsterEventType(event)
    return {r.step_key: r.dagster_event.pid for r in instance.all_logs(run_id, of_type=kind) if r.dagster_event}


def wait_for(what: str, ready, proc: subprocess.Popen) -> None:
    """Poll ``ready()`` until it is true; fail at once if ``proc`` (the launcher) ends first."""
    deadline = time.monotonic() + WAIT_S
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(f"evalh run ended before {what}: {proc.stderr.read() if proc.stderr else ''}")
        assert time.monotonic() < deadline, f"no {what} within {WAIT_S} s"
        time.sleep(0.1)


def pool_pids(workers) -> set[int]:
    """The pool processes (the ones that run steps) of the workers now."""
    pids: set[int] = set()
    for worker in workers:
        children = Path(f"/proc/{worker.proc.pid}/task/{worker.proc.pid}/children").read_text().split()
        pids |= {int(pid) for pid in children}
    return pids


def launch(path: Path, launcher: dict, tmp_path: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([*EVALH, "run", str(path), *extra], env=launcher, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def both_shards_running(instance, calls: Path) -> bool:
    """Both shard steps started, and each has called the system (case_0 in shard 1, case_1 in shard 2)."""
    runs = instance.get_runs()
    started = bool(runs) and set(SHARD_STEPS) <= set(step_pids(instance, runs[0].run_id))
    called = {json.loads(line)[0] for line in calls.read_text().splitlines()} if calls.exists() else set()
    return started and {"case_0", "case_1"} <= called


def published_traces(fs, run_url: str) -> list[dict]:
    return [json.loads(line) for line in fs.cat(f"{run_url}/traces.jsonl").decode().splitlines()]


@pytest.fixture
def team(tmp_path, env, team_postgres, redis_url, s3_server, monkeypatch):
    """The eval, the machines' environments, the test process on the team instance, the bucket's file system."""
    bucket = s3_server.make_bucket(f"team-{uuid.uuid4().hex[:8]}")
    shared, launcher = machines_env(tmp_path, env, team_postgres, redis_url, s3_server)
    for name in (*team_postgres, *s3_server.env(), "DAGSTER_HOME", "EVALH_CELERY_BROKER", "EVALH_EVALS_DIR",
                 "EVALH_CACHE_DIR", "EVALH_TEST_GATE", "EVALH_TEST_CALL_LOG"):
        monkeypatch.setenv(name, launcher[name])
    return team_eval(tmp_path, bucket), shared, launcher, s3_server.filesystem(), bucket


def test_the_shards_of_one_run_execute_on_two_workers_at_once(tmp_path, team, redis_url, in_process_verdicts):
    import dagster as dg

    path, shared, launcher, fs, bucket = team
    expected = in_process_verdicts
    with celery_workers(2, redis_url, shared, TEAM_YAML) as workers:
        pools = pool_pids(workers)
        run = launch(path, launcher, tmp_path)
        with dg.DagsterInstance.get() as instance:
            wait_for("both shards running", lambda: both_shards_running(instance, tmp_path / "calls.log"), run)
            (tmp_path / "gate").write_text("")
            out, err = run.communicate(timeout=WAIT_S)
            assert run.returncode == 0, err + "".join(w.log.read_text()[-3000:] for w in workers)
            [dagster_run] = instance.get_runs()
            assert dagster_run.status == dg.DagsterRunStatus.SUCCESS
            ran_in = step_pids(instance, dagster_run.run_id)
        storages = [list((w.folder / "dagster_home" / "storage").rglob("*")) for w in workers]

    assert set(ran_in) >= STEPS
    assert set(ran_in.values()) <= pools  # every step on a worker, none in the launcher
    assert len({ran_in[step] for step in SHARD_STEPS}) == SHARDS  # the shards on two workers, at once
    # The values passed between the steps are in the run's folder, none in a machine's own.
    [run_dir] = fs.ls(f"{bucket}/runs")
    run_url = f"s3://{run_dir}"
    assert fs.find(f"{run_url}/.step_values/{dagster_run.run_id}") and not any(storages)
    traces = published_traces(fs, run_url)
    cells = [(t["case_id"], t["variant_name"]) for t in traces]
    assert len(cells) == len(set(cells)) == CASES * 2
    assert {t["extra"]["executor"]["pid"] for t in traces} == {ran_in[step] for step in SHARD_STEPS}
    assert not fs.exists(f"{run_url}/shards")
    assert verdicts(yaml.safe_load(fs.cat(f"{run_url}/summary.yaml"))) == expected


@pytest.mark.parametrize("finish", ["reexecute_from_failure", "resume"])
def test_a_worker_killed_mid_shard_fails_its_step_and_the_run_finishes_with_only_missing_cells(
        tmp_path, team, redis_url, in_process_verdicts, finish):
    import dagster as dg

    from evalh_pipeline.defs.evals.names import run_job
    from evalh_pipeline.defs.launch import reconstructable_eval_job
    from evalh_pipeline.runner.loading import load_eval

    path, shared, launcher, fs, bucket = team
    calls = tmp_path / "calls.log"
    expected = in_process_verdicts
    calls.write_text("")
    with celery_workers(2, redis_url, shared, TEAM_YAML) as workers, dg.DagsterInstance.get() as instance:
        first = launch(path, launcher, tmp_path)
        wait_for("both shards running", lambda: both_shards_running(instance, calls), first)
        [parent] = instance.get_runs()
        lost, kept = SHARD_STEPS
        victim = step_pids(instance, parent.run_id)[lost]
        [owner] = [w for w in workers if victim in pool_pids([w])]
        owner.kill_step(victim)  # SIGKILL of the process running the shard, mid-way
        (tmp_path / "gate").write_text("")  # the other shard finishes
        _, err = first.communicate(timeout=WAIT_S)
        assert first.returncode != 0, err

        parent = instance.get_run_by_id(parent.run_id)
        assert parent.status == dg.DagsterRunStatus.FAILURE
        succeeded = step_pids(instance, parent.run_id, "STEP_SUCCESS")
        assert kept in succeeded and lost not in succeeded
        [run_dir] = fs.ls(f"{bucket}/runs")
        run_url = f"s3://{run_dir}"
        assert not fs.exists(f"{run_url}/traces.jsonl") and not fs.exists(f"{run_url}/summary.yaml")

        calls.write_text("")
        if finish == "resume":
            resumed = run_evalh(["run", str(path), "--resume", run_url], launcher, tmp_path, timeout=WAIT_S)
            assert resumed.returncode == 0, resumed.stderr
        else:
            # As the UI's "Re-execute from failure": the steps that did not succeed and what
            # follows them, the others' values read from the run's folder (on any worker).
            job = reconstructable_eval_job(load_eval(path), run_job("toy"), None)
            with dg.execute_job(job, instance, tags=parent.tags,
                                reexecution_options=dg.ReexecutionOptions.from_failure(parent.run_id, instance)
                                ) as result:
                assert result.success
                again = {e.step_key for e in result.all_events if e.event_type_value == "STEP_START"}
            assert lost in again and kept not in again and not any("plan_traces" in s for s in again), again

    rerun = [tuple(json.loads(line)) for line in calls.read_text().splitlines()]
    # Only cells of the lost shard ran again (its even cases), none of the shard that finished.
    assert rerun and {case for case, _ in rerun} <= {f"case_{i}" for i in range(0, CASES, 2)}
    traces = published_traces(fs, run_url)
    cells = [(t["case_id"], t["variant_name"]) for t in traces]
    assert len(cells) == len(set(cells)) == CASES * 2  # every cell exactly once
    assert verdicts(yaml.safe_load(fs.cat(f"{run_url}/summary.yaml"))) == expected
