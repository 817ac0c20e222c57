"""What a run's deployment needs, checked before any cell runs: one line per problem.

The eval's ``run.executor`` names a Dagster executor (defs/evals/executors.py), the Dagster
instance's ``dagster.yaml`` names its storage, and the canonical output may be an object
store. Each can be wrong in a way Dagster would only say deep inside the run (a celery step
queued forever on a broker nobody listens to, dagster-postgres failing on its first event, an
upload refused after the first stage): these checks say it first, without starting anything.
"""

from __future__ import annotations

import importlib.util
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from evalh_pipeline.common.masking import mask_text
from evalh_pipeline.config.spec import EvalSpec

# The celery broker when eval.yaml names none (read by every process when a run starts).
CELERY_BROKER_ENV = "EVALH_CELERY_BROKER"
# How long the broker probe waits: a broker on the network answers in milliseconds.
BROKER_PROBE_SECONDS = 3.0
# The module each executor needs, and the extra that installs it.
EXECUTOR_MODULES = {"celery": ("dagster_celery", "celery"), "k8s": ("dagster_k8s", "k8s"),
                    "docker": ("dagster_docker", "docker")}
# dagster-postgres's storages (dagster.yaml `storage:`, or the three separate ones).
_STORAGE_KEYS = ("storage", "run_storage", "event_log_storage", "schedule_storage")
PSYCOPG2_SCHEME = "postgresql+psycopg2"


# Executors whose steps may run on other machines: they need an instance every machine reaches.
REMOTE_EXECUTORS = ("celery", "k8s", "docker")


def deployment_problems(spec: EvalSpec, instance_yaml: Path | None) -> list[str]:
    """Every problem of the run's executor, instance (``instance_yaml``, when it exists) and
    canonical output, one line each (secrets masked)."""
    problems = executor_problems(spec)
    if instance_yaml is not None and instance_yaml.is_file():
        problems += instance_problems(instance_yaml)
    if spec.config.run.executor.type in REMOTE_EXECUTORS and not _has_postgres_storage(instance_yaml):
        problems.append(f"{spec.path.name}: run.executor: executor {spec.config.run.executor.type!r} runs steps on "
                        f"other machines, which need the Dagster instance too: PostgreSQL storage in "
                        f"{instance_yaml or '$DAGSTER_HOME/dagster.yaml'} (deploy/dagster.yaml)")
    problems += output_problems(spec)
    return [mask_text(p, spec.secret_values) for p in problems]


def executor_problems(spec: EvalSpec) -> list[str]:
    """The executor's extra is installed; a celery broker is named and answers."""
    executor = spec.config.run.executor
    where = f"{spec.path.name}: run.executor"
    needed = EXECUTOR_MODULES.get(executor.type)
    if needed and importlib.util.find_spec(needed[0]) is None:
        return [f"{where}: executor {executor.type!r} needs {needed[0].replace('_', '-')}: "
                f"pip install 'evalh-pipeline[{needed[1]}]'"]
    if executor.type != "celery":
        return []
    broker = executor.broker or os.environ.get(CELERY_BROKER_ENV, "")
    if not broker:
        return [f"{where}: executor 'celery' needs a broker: set run.executor.broker or ${CELERY_BROKER_ENV} "
                "(redis://HOST:6379/0)"]
    problem = broker_problem(broker)
    return [f"{where}.broker: {problem}"] if problem else []


def broker_problem(url: str) -> str:
    """Why the Redis broker at ``url`` cannot take a run ("" if it answers a PING)."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss"):
        return f"{_without_password(url)} is not a Redis URL (redis://HOST:PORT/DB): evalh's celery executor uses Redis"
    host, port = parts.hostname or "localhost", parts.port or 6379
    try:
        with socket.create_connection((host, port), timeout=BROKER_PROBE_SECONDS) as conn:
            if parts.scheme == "rediss":
                return ""  # a TLS listener answered: the handshake is celery's to do
            conn.settimeout(BROKER_PROBE_SECONDS)
            conn.sendall(b"PING\r\n")
            reply = conn.recv(64)
    except OSError as exc:
        return (f"no Redis broker reachable at {host}:{port} ({exc.strerror or type(exc).__name__}): start "
                f"redis-server there, or point run.executor.broker / ${CELERY_BROKER_ENV} at one")
    # +PONG, or an error that proves a Redis answered (-NOAUTH: celery sends the URL's password).
    if not reply.startswith((b"+PONG", b"-NOAUTH", b"-ERR")):
        return f"{host}:{port} answered, but not as Redis does: is it a Redis server?"
    return ""


def instance_problems(instance_yaml: Path) -> list[str]:
    """A dagster-postgres storage whose URL would pick psycopg 3 (SQLAlchemy 2's default driver
    for ``postgresql://``), on which dagster-postgres fails at its first event."""
    try:
        config = yaml.safe_load(instance_yaml.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        return [f"{instance_yaml}: not a readable dagster.yaml ({type(exc).__name__})"]
    problems = []
    for key in _STORAGE_KEYS:
        section = config.get(key) if isinstance(config, dict) else None
        if not isinstance(section, dict):
            continue
        postgres = section.get("postgres") if key == "storage" else _module_config(section)
        if not isinstance(postgres, dict):
            continue
        problem = _postgres_problem(postgres)
        if problem:
            problems.append(f"{instance_yaml}: {key}: {problem}")
    return problems


def _has_postgres_storage(instance_yaml: Path | None) -> bool:
    """Whether the instance keeps its runs in PostgreSQL (else SQLite files in one folder)."""
    try:
        config = yaml.safe_load(instance_yaml.read_text(encoding="utf-8")) if instance_yaml else None
    except (OSError, yaml.YAMLError):
        return False
    if not isinstance(config, dict):
        return False
    storage = config.get("storage")
    runs = config.get("run_storage")
    return (isinstance(storage, dict) and "postgres" in storage) or (
        isinstance(runs, dict) and str(runs.get("module", "")).startswith("dagster_postgres"))


def _module_config(section: dict[str, Any]) -> Any:
    """The config of a separate storage of dagster-postgres (``module: dagster_postgres...``)."""
    return section.get("config") if str(section.get("module", "")).startswith("dagster_postgres") else None


def _postgres_problem(postgres: dict[str, Any]) -> str:
    fix = (f"use {PSYCOPG2_SCHEME}:// (postgres_url), or postgres_db.scheme: {PSYCOPG2_SCHEME}; "
           "dagster-postgres needs the psycopg2 driver")
    url = postgres.get("postgres_url")
    if url is not None:
        if isinstance(url, dict) and "env" in url:
            url = os.environ.get(str(url["env"]), "")
            if not url:
                return f"postgres_url: ${postgres['postgres_url']['env']} is not set"
        scheme = urlsplit(str(url)).scheme
        if scheme != PSYCOPG2_SCHEME:
            return f"postgres_url {scheme or '(no scheme)'}:// selects psycopg 3 with this SQLAlchemy: {fix}"
        return ""
    db = postgres.get("postgres_db")
    if isinstance(db, dict) and db.get("scheme", "postgresql") != PSYCOPG2_SCHEME:
        return f"postgres_db.scheme {db.get('scheme', 'postgresql')} (the default) selects psycopg 3 with this SQLAlchemy: {fix}"
    return ""


def output_problems(spec: EvalSpec) -> list[str]:
    """An ``s3://`` canonical output has credentials to write with (botocore's usual chain:
    the environment, ``~/.aws``, an instance role)."""
    outputs = list(spec.outputs) or [spec.runs_root]
    target = str(outputs[0])
    if not target.startswith(("s3://", "s3a://")):
        return []
    try:
        import botocore.session
    except ImportError:
        return [f"{spec.path.name}: output[0] {target}: needs s3fs: pip install 'evalh-pipeline[s3]'"]
    if botocore.session.get_session().get_credentials() is None:
        return [f"{spec.path.name}: output[0] {target}: no S3 credentials found (AWS_ACCESS_KEY_ID and "
                "AWS_SECRET_ACCESS_KEY, AWS_PROFILE or ~/.aws/credentials): every worker needs them to write the run"]
    return []


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password:
        return url.replace(f":{parts.password}@", ":***@", 1)
    return url
