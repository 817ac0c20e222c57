"""`run.executor: {type: docker}`: dagster-docker's `docker_executor` runs each step of an
eval run in its own container on a real dockerd (networking off, tests/sandbox/engine.py).

The step containers have no network (`network: none`), so everything they share with the
launching `evalh run` comes through bind mounts at the same paths: the Dagster instance
(PostgreSQL through its Unix socket folder), the eval and its run folder, the code (the
checkout and its virtualenv, read-only) and the interpreter (the host's /usr and Python,
read-only, over the engine's busybox image). Each shard step ran in a container of its own
(`extra.executor`: another host than the launcher's), the run folder is the contract of an
in-process run, and the summary is the in-process run's.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from tests.sandbox.engine import Engine, build_busybox_image
from tests.sandbox.support import records
from tests.support.deployment import verdicts
from tests.support.evalh_process import run_evalh
from tests.support.evals import write_eval
from tests.support.paths import REPO

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

CASES = 6
SHARDS = 2
# The step image: the engine's busybox root whose PATH finds this virtualenv's `dagster`, the
# command dagster-docker runs in each step container (`dagster api execute_step ...`).
STEP_IMAGE = "local/evalh-step:1"
# The instance every container shares with the launcher: PostgreSQL through its socket folder
# (the containers have no network), the URL from the environment each process reads.
INSTANCE_YAML = """telemetry:
  enabled: false
storage:
  postgres:
    postgres_url: {env: DAGSTER_PG_URL}
"""


def interpreter_mounts() -> list[str]:
    """Read-only bind mounts, each at its own path, that let this Python and its virtualenv run
    in a container of the busybox image: the system's libraries, the interpreter, the checkout."""
    roots = {Path(p) for p in ("/usr", "/lib", "/lib64") if Path(p).exists()}
    roots |= {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), REPO.resolve()}
    kept = [r for r in roots if not any(o != r and o in r.parents for o in roots)]
    return [f"{root}:{root}:ro" for root in sorted(kept)]


@pytest.fixture
def step_image(docker_engine: Engine) -> str:
    build_busybox_image(docker_engine, STEP_IMAGE, changes=(f"ENV PATH={Path(sys.prefix) / 'bin'}:/usr/bin:/bin",))
    return STEP_IMAGE


def socket_folder(dsn: str) -> str:
    """The Unix socket folder of the test PostgreSQL (tests/postgres_server.py's URL names it)."""
    from urllib.parse import parse_qs, urlsplit

    return parse_qs(urlsplit(dsn).query)["host"][0]


@pytest.fixture
def instance_env(tmp_path: Path, postgres_dsn: str) -> dict[str, str]:
    """A fresh database, and a DAGSTER_HOME whose dagster.yaml keeps the instance in it."""
    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    home = tmp_path / "docker_home"
    home.mkdir()
    (home / "dagster.yaml").write_text(INSTANCE_YAML)
    return {"DAGSTER_HOME": str(home),
            "DAGSTER_PG_URL": f"postgresql+psycopg2://postgres@/{name}?host={socket_folder(postgres_dsn)}"}


def docker_eval(folder: Path, postgres_dsn: str, image: str) -> Path:
    """The toy eval on the docker executor with 2 shards, its containers without a network."""
    path = write_eval(folder, cases=CASES)
    volumes = [*interpreter_mounts(), f"{folder.parent}:{folder.parent}", f"{socket_folder(postgres_dsn)}:"
               f"{socket_folder(postgres_dsn)}"]
    executor = {"type": "docker", "image": image, "network": "none", "volumes": volumes,
                "env_vars": ["DAGSTER_PG_URL", "DAGSTER_HOME"]}
    path.write_text(path.read_text().replace(
        "  max_concurrency: 4\n", f"  max_concurrency: 4\n  shards: {SHARDS}\n  executor: {json.dumps(executor)}\n"))
    return path


def the_run(folder: Path) -> Path:
    [run_dir] = [p for p in (folder / "runs").iterdir() if p.name != "baselines"]
    return run_dir


def run_files(run_dir: Path) -> set[str]:
    """The run folder's contract: the files a user reads (the hidden ones are evalh's own
    bookkeeping), without the content hash in the names of results/."""
    names = (p.relative_to(run_dir) for p in run_dir.rglob("*") if p.is_file())
    return {re.sub(r"-[0-9a-f]{24}\.jsonl$", ".jsonl", str(n)) for n in names
            if not any(part.startswith(".") for part in n.parts)}


@pytest.mark.parametrize("docker_engine", ["docker"], indirect=True)
def test_each_shard_of_a_run_executes_in_its_own_container_with_no_network(
        tmp_path, env, docker_engine: Engine, step_image, postgres_dsn, instance_env):
    local = write_eval(tmp_path / "local" / "toy", cases=CASES)
    done = run_evalh(["run", str(local)], env, tmp_path)
    assert done.returncode == 0, done.stderr

    path = docker_eval(tmp_path / "docker" / "toy", postgres_dsn, step_image)
    launcher = {**env, **instance_env, "DOCKER_HOST": docker_engine.host}
    before = set(docker_engine.docker("ps", "-aq").stdout.decode().split())
    done = run_evalh(["run", str(path)], launcher, tmp_path, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]

    containers = set(docker_engine.docker("ps", "-aq").stdout.decode().split()) - before
    inspected = json.loads(docker_engine.docker("inspect", *containers).stdout)
    assert {c["HostConfig"]["NetworkMode"] for c in inspected} == {"none"}
    steps = {next(e.split("=", 1)[1] for e in c["Config"]["Env"] if e.startswith("DAGSTER_RUN_STEP_KEY=")): c
             for c in inspected}
    shard_steps = {f"toy__traces.toy__traces_shard[shard_{k}_of_{SHARDS}]" for k in range(1, SHARDS + 1)}
    assert shard_steps <= set(steps) and all(c["State"]["ExitCode"] == 0 for c in inspected)

    run_dir, in_process = the_run(path.parent), the_run(local.parent)
    traces = records(run_dir, "traces.jsonl")
    cells = [(t["case_id"], t["variant_name"]) for t in traces]
    assert len(cells) == len(set(cells)) == CASES * 2
    where = {(t["extra"]["executor"]["host"], t["extra"]["executor"]["shard"]) for t in traces}
    hosts = {c["Config"]["Hostname"] for name, c in steps.items() if name in shard_steps}
    assert {host for host, _ in where} == hosts and socket.gethostname() not in hosts and len(hosts) == SHARDS
    assert len(where) == SHARDS
    assert run_files(run_dir) == run_files(in_process)
    assert verdicts(yaml.safe_load((run_dir / "summary.yaml").read_text())) == verdicts(
        yaml.safe_load((in_process / "summary.yaml").read_text()))
