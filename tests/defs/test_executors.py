"""run.executor.type -> the Dagster executor of the eval's run and judge jobs."""

from __future__ import annotations

import dagster as dg
import pytest

from evalh_pipeline.config.schema import ExecutorConfig
from evalh_pipeline.defs.evals.assets import build_eval_assets
from evalh_pipeline.defs.evals.executors import job_executor
from evalh_pipeline.runner.loading import load_eval
from tests.support.deployment import executor_eval


@pytest.mark.parametrize("kind", ["local", "in_process"])
def test_local_and_in_process_are_the_in_process_executor(kind):
    assert job_executor(ExecutorConfig(type=kind)) is dg.in_process_executor


def applied(executor: dg.ExecutorDefinition) -> dict:
    """The executor's config as a run gets it (its configured values over Dagster's defaults)."""
    result = executor.apply_config_mapping({})
    assert result.success, result.errors
    return result.value.get("config", {})


def test_multiprocess_takes_its_process_limit():
    assert job_executor(ExecutorConfig(type="multiprocess")) is dg.multiprocess_executor
    limited = job_executor(ExecutorConfig(type="multiprocess", max_concurrent=3))
    assert limited.name == "multiprocess" and applied(limited)["max_concurrent"] == 3


def test_celery_reads_its_broker_from_eval_yaml_or_the_environment_at_run_time(monkeypatch):
    named = job_executor(ExecutorConfig(type="celery", broker="redis://broker:6379/1"))
    assert named.name == "celery"
    assert {k: applied(named)[k] for k in ("broker", "backend")} == {"broker": "redis://broker:6379/1",
                                                                     "backend": "redis://broker:6379/1"}
    from_env = job_executor(ExecutorConfig(type="celery"))
    monkeypatch.setenv("EVALH_CELERY_BROKER", "redis://from-env:6379/2")
    assert {k: applied(from_env)[k] for k in ("broker", "backend")} == {
        "broker": "redis://from-env:6379/2", "backend": "redis://from-env:6379/2"}


@pytest.mark.parametrize("kind, image_key", [("k8s", "job_image"), ("docker", "image")])
def test_k8s_and_docker_run_the_steps_from_the_image_eval_yaml_names(kind, image_key):
    # Configured, not run here: no cluster (docs/deployment.md); the docker executor runs on a
    # real dockerd in tests/sandbox/test_docker_executor.py.
    named = job_executor(ExecutorConfig(type=kind, image="registry.example.com/evalh:1"))
    assert named.name == kind and applied(named)[image_key] == "registry.example.com/evalh:1"
    assert image_key not in applied(job_executor(ExecutorConfig(type=kind)))  # the run launcher's image


def test_docker_gives_each_step_container_the_mounts_network_and_variables_eval_yaml_names():
    named = job_executor(ExecutorConfig(type="docker", image="local/evalh:1", volumes=["/srv/runs:/srv/runs"],
                                        network="none", env_vars=["DAGSTER_PG_URL"]))
    config = applied(named)
    assert config["container_kwargs"] == {"volumes": ["/srv/runs:/srv/runs"]}
    assert config["networks"] == ["none"] and config["env_vars"] == ["DAGSTER_PG_URL"]
    plain = applied(job_executor(ExecutorConfig(type="docker")))
    assert not {"container_kwargs", "networks", "env_vars"} & set(plain)  # the engine's defaults


def test_the_eval_jobs_use_the_executor_of_run_executor(tmp_path):
    spec = load_eval(executor_eval(tmp_path / "toy", "{type: celery, broker: 'redis://127.0.0.1:6379/0'}"))
    built = build_eval_assets(spec)
    executors = {job.name: job.executor_def.name for job in built.jobs}
    assert executors == {"toy__run": "celery", "toy__judge": "celery", "toy__promote": "in_process",
                         "toy__judge_consistency": "in_process"}
