"""run.executor.type: the Dagster executors evalh maps it to, and one line for any other."""

from __future__ import annotations

import pytest

from evalh_pipeline.runner.loading import load_eval
from tests.config.support import BASE, config_error, write

SUPPORTED = "use one of auto, in_process, local, multiprocess, celery, k8s, docker"


@pytest.mark.parametrize("executor", ["local", "in_process", "multiprocess", "celery", "k8s", "docker"])
def test_every_supported_executor_type_loads_without_a_warning(tmp_path, executor):
    spec = load_eval(write(tmp_path, BASE + f"run:\n  executor: {{type: {executor}}}\n"))
    assert spec.config.run.executor.type == executor
    assert not [w for w in spec.warnings if "executor" in str(w)]


def test_an_unknown_executor_type_is_a_one_line_load_error_naming_what_is_supported(tmp_path):
    message = config_error(write(tmp_path, BASE + "run:\n  executor: {type: spark}\n"))
    assert len(message.strip().splitlines()) == 1
    assert "eval.yaml:14 run.executor.type" in message
    assert f"unknown executor 'spark': {SUPPORTED}" in message


@pytest.mark.parametrize("executor", ["ray", "modal"])
def test_ray_and_modal_are_refused_in_one_line_saying_why_and_what_is_supported(tmp_path, executor):
    message = config_error(write(tmp_path, BASE + f"run:\n  executor:\n    type: {executor}\n"))
    assert len(message.strip().splitlines()) == 1
    assert f"eval.yaml:15 run.executor.type: executor '{executor}' is not supported" in message
    assert "dagster-io/dagster#9785" in message and SUPPORTED in message


def test_celery_settings_are_read_and_a_zero_max_concurrent_is_refused(tmp_path):
    spec = load_eval(write(tmp_path, BASE + "run:\n  executor: {type: celery, broker: 'redis://broker:6379/1'}\n"))
    assert spec.config.run.executor.broker == "redis://broker:6379/1"
    message = config_error(write(tmp_path / "zero", BASE + "run:\n  executor: {type: multiprocess, max_concurrent: 0}\n"))
    assert "run.executor.max_concurrent" in message


def test_docker_mounts_network_and_variable_names_are_read(tmp_path):
    spec = load_eval(write(tmp_path, BASE + "run:\n  executor:\n    type: docker\n    volumes: ['/srv/runs:/srv/runs', "
                                            "'/opt/venv:/opt/venv:ro']\n    network: none\n    env_vars: [DAGSTER_PG_URL]\n"))
    executor = spec.config.run.executor
    assert (executor.volumes, executor.network, executor.env_vars) == (
        ["/srv/runs:/srv/runs", "/opt/venv:/opt/venv:ro"], "none", ["DAGSTER_PG_URL"])


@pytest.mark.parametrize("setting, said", [
    ("volumes: [runs:/srv/runs]", "run.executor.volumes: 'runs:/srv/runs' is not a bind mount: write HOST:CONTAINER"),
    ("volumes: ['/srv:/srv:rx']", "run.executor.volumes: '/srv:/srv:rx' is not a bind mount"),
    ("env_vars: ['TOKEN=abc']", "run.executor.env_vars: 'TOKEN=abc' is not a variable name: list names only"),
])
def test_a_bad_docker_setting_is_a_one_line_load_error(tmp_path, setting, said):
    message = config_error(write(tmp_path, BASE + f"run:\n  executor:\n    type: docker\n    {setting}\n"))
    assert len(message.strip().splitlines()) == 1 and said in message


def test_docker_settings_on_another_executor_are_refused_in_one_line(tmp_path):
    message = config_error(write(tmp_path, BASE + "run:\n  executor: {type: celery, network: none}\n"))
    assert len(message.strip().splitlines()) == 1
    assert "network: settings of the docker executor; this eval's executor is 'celery'" in message
