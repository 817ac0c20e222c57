"""The CLI's local Dagster instance: opened from its folder, the environment left alone."""

from __future__ import annotations

import os

from evalh_pipeline.defs.launch import local_instance


def test_without_dagster_home_the_instance_is_dot_dagster_home_and_the_environment_is_unchanged(tmp_path, monkeypatch):
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    instance = local_instance()
    try:
        assert "DAGSTER_HOME" not in os.environ
        assert instance.is_persistent
        assert os.path.realpath(instance.root_directory) == os.path.realpath(tmp_path / ".dagster_home")
        assert "telemetry:\n  enabled: false" in (tmp_path / ".dagster_home" / "dagster.yaml").read_text()
    finally:
        instance.dispose()


def test_the_instance_evalh_creates_queues_runs_one_per_partition_and_a_few_per_eval(tmp_path, monkeypatch):
    from dagster._core.run_coordinator import QueuedRunCoordinator

    from evalh_pipeline.defs.instance_config import EVAL_RUNS_IN_FLIGHT

    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    monkeypatch.chdir(tmp_path)
    instance = local_instance()
    try:
        coordinator = instance.run_coordinator
        assert isinstance(coordinator, QueuedRunCoordinator)
        limits = {limit["key"]: limit for limit in coordinator.get_run_queue_config().tag_concurrency_limits}
        assert limits["dagster/partition"]["limit"] == 1
        assert limits["dagster/partition"]["value"] == {"applyLimitPerUniqueValue": True}
        assert limits["evalh/eval"]["limit"] == EVAL_RUNS_IN_FLIGHT
    finally:
        instance.dispose()


def test_an_empty_dagster_home_gets_evalhs_config_and_prints_no_banner(tmp_path, monkeypatch, capfd):
    from evalh_pipeline.defs.instance_config import INSTANCE_YAML

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    instance = local_instance()
    try:
        assert (home / "dagster.yaml").read_text() == INSTANCE_YAML
        assert "Welcome to Dagster" not in capfd.readouterr().err  # the banner of a home without config
        assert os.environ["DAGSTER_HOME"] == str(home)
    finally:
        instance.dispose()


def test_a_dagster_home_in_use_is_left_as_its_owner_set_it_up(tmp_path, monkeypatch):
    configured, unconfigured = tmp_path / "configured", tmp_path / "unconfigured"
    configured.mkdir()
    (configured / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    unconfigured.mkdir()
    (unconfigured / "history").mkdir()  # used by Dagster on its defaults already
    for home in (configured, unconfigured):
        monkeypatch.setenv("DAGSTER_HOME", str(home))
        local_instance().dispose()
    assert (configured / "dagster.yaml").read_text() == "telemetry:\n  enabled: false\n"
    assert not (unconfigured / "dagster.yaml").exists()
