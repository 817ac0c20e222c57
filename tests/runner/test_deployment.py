"""A run's deployment checked before any cell: the executor's extra and broker, the instance's
PostgreSQL driver, the S3 output's credentials; one line each."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalh_pipeline.cli.group import EXIT_CONFIG
from evalh_pipeline.runner import deployment
from evalh_pipeline.runner.deployment import broker_problem, deployment_problems, instance_problems
from evalh_pipeline.runner.loading import load_eval
from tests.support.deployment import TEAM_YAML, executor_eval
from tests.support.evalh_process import run_evalh
from tests.support.redis_server import free_port



def test_a_celery_executor_without_a_broker_says_where_to_name_one(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALH_CELERY_BROKER", raising=False)
    spec = load_eval(executor_eval(tmp_path / "toy", "{type: celery}"))
    assert deployment_problems(spec, TEAM_YAML) == [
        "eval.yaml: run.executor: executor 'celery' needs a broker: set run.executor.broker or "
        "$EVALH_CELERY_BROKER (redis://HOST:6379/0)"]


def test_a_celery_broker_nobody_listens_on_is_one_line_before_any_cell(tmp_path, monkeypatch):
    port = free_port()
    monkeypatch.setenv("EVALH_CELERY_BROKER", f"redis://:hunter2@127.0.0.1:{port}/0")
    spec = load_eval(executor_eval(tmp_path / "toy", "{type: celery}"))
    [problem] = deployment_problems(spec, TEAM_YAML)
    assert problem.startswith(f"eval.yaml: run.executor.broker: no Redis broker reachable at 127.0.0.1:{port} (")
    assert "hunter2" not in problem


def test_a_broker_url_that_is_not_redis_is_refused():
    assert broker_problem("amqp://guest@127.0.0.1//") == (
        "amqp://guest@127.0.0.1// is not a Redis URL (redis://HOST:PORT/DB): evalh's celery executor uses Redis")


@pytest.mark.integration
def test_a_running_redis_is_a_broker_that_answers(tmp_path, redis_url):
    spec = load_eval(executor_eval(tmp_path / "toy", f"{{type: celery, broker: '{redis_url}'}}"))
    assert deployment_problems(spec, TEAM_YAML) == []


def test_an_executor_whose_extra_is_missing_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(deployment.EXECUTOR_MODULES, "k8s", ("evalh_test_no_such_module", "k8s"))
    spec = load_eval(executor_eval(tmp_path / "toy", "{type: k8s}"))
    assert deployment_problems(spec, TEAM_YAML) == [
        "eval.yaml: run.executor: executor 'k8s' needs evalh-test-no-such-module: pip install 'evalh-pipeline[k8s]'"]


@pytest.mark.parametrize("storage", [
    "storage:\n  postgres:\n    postgres_url: postgresql://u:p@db:5432/dagster\n",
    "storage:\n  postgres:\n    postgres_db: {username: u, hostname: db, db_name: dagster}\n",
    "run_storage:\n  module: dagster_postgres.run_storage\n  class: PostgresRunStorage\n"
    "  config:\n    postgres_url: postgres://u@db/dagster\n",
])
def test_a_postgres_instance_without_the_psycopg2_driver_is_explained(tmp_path, storage):
    yaml_path = tmp_path / "dagster.yaml"
    yaml_path.write_text(storage)
    [problem] = instance_problems(yaml_path)
    assert problem.startswith(f"{yaml_path}: ")
    assert "selects psycopg 3 with this SQLAlchemy: use postgresql+psycopg2://" in problem
    assert "p@db" not in problem


def test_a_postgres_url_from_an_unset_variable_is_said(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALH_TEST_PG_URL", raising=False)
    yaml_path = tmp_path / "dagster.yaml"
    yaml_path.write_text("storage:\n  postgres:\n    postgres_url: {env: EVALH_TEST_PG_URL}\n")
    assert instance_problems(yaml_path) == [f"{yaml_path}: storage: postgres_url: $EVALH_TEST_PG_URL is not set"]
    monkeypatch.setenv("EVALH_TEST_PG_URL", "postgresql+psycopg2://u@db/dagster")
    assert instance_problems(yaml_path) == []


@pytest.mark.parametrize("executor", ["celery", "k8s", "docker"])
def test_an_executor_with_workers_elsewhere_needs_a_postgresql_instance(tmp_path, executor, monkeypatch):
    monkeypatch.setenv("EVALH_CELERY_BROKER", f"redis://127.0.0.1:{free_port()}/0")
    local = tmp_path / "dagster.yaml"
    local.write_text("telemetry:\n  enabled: false\n")
    spec = load_eval(executor_eval(tmp_path / "toy", f"{{type: {executor}}}"))
    needs = (f"eval.yaml: run.executor: executor '{executor}' runs steps on other machines, which need the Dagster "
             f"instance too: PostgreSQL storage in {local} (deploy/dagster.yaml)")
    assert needs in deployment_problems(spec, local)
    assert not [p for p in deployment_problems(spec, TEAM_YAML) if "PostgreSQL storage" in p]


def test_the_team_dagster_yaml_and_the_local_one_pass():
    from evalh_pipeline.defs.instance_config import INSTANCE_YAML

    assert instance_problems(TEAM_YAML) == []
    local = Path(TEAM_YAML.parent / "missing.yaml")
    assert not local.exists() and INSTANCE_YAML  # a missing dagster.yaml is Dagster's default: nothing to check


def without_aws_credentials(monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    # No instance role either: the lookup must not leave this machine.
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_an_s3_run_folder_without_credentials_is_one_line(tmp_path, monkeypatch):
    without_aws_credentials(monkeypatch, tmp_path)
    spec = load_eval(executor_eval(tmp_path / "toy", "{type: local}", output="s3://evals/runs"))
    assert deployment_problems(spec, None) == [
        "eval.yaml: output[0] s3://evals/runs: no S3 credentials found (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, "
        "AWS_PROFILE or ~/.aws/credentials): every worker needs them to write the run"]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    assert deployment_problems(spec, None) == []


@pytest.mark.integration
def test_evalh_run_refuses_an_unreachable_broker_before_writing_anything(tmp_path, env):
    path = executor_eval(tmp_path / "toy", f"{{type: celery, broker: 'redis://127.0.0.1:{free_port()}/0'}}")
    done = run_evalh(["run", str(path)], env=env, cwd=tmp_path)
    assert done.returncode == EXIT_CONFIG, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "run.executor.broker: no Redis broker reachable at 127.0.0.1:" in lines[0]
    assert not (tmp_path / "toy" / "runs").exists() or not any((tmp_path / "toy" / "runs").iterdir())
    assert not (tmp_path / "calls.log").exists()


@pytest.mark.integration
def test_a_dry_run_names_the_deployment_problems_too(tmp_path, env):
    path = executor_eval(tmp_path / "toy", f"{{type: celery, broker: 'redis://127.0.0.1:{free_port()}/0'}}")
    done = run_evalh(["run", str(path), "--dry-run"], env=env, cwd=tmp_path)
    assert done.returncode == EXIT_CONFIG, done.stderr
    assert "run.executor.broker: no Redis broker reachable at 127.0.0.1:" in done.stderr
