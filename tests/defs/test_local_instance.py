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
