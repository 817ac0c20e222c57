"""Settings: the environment evalh reads, read once and then independent of os.environ."""

from pathlib import Path

from evalh_pipeline.common.settings import Settings


def test_the_runs_and_cache_folders_come_from_their_variables_resolved(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_environment({"EVALH_RUNS_DIR": "my_runs", "EVALH_CACHE_DIR": "~/evalh-cache", "K": "v"})
    assert settings.runs_dir == tmp_path / "my_runs"
    assert settings.cache == (Path.home() / "evalh-cache").resolve()
    assert settings.env == {"EVALH_RUNS_DIR": "my_runs", "EVALH_CACHE_DIR": "~/evalh-cache", "K": "v"}


def test_without_the_variables_runs_is_left_to_the_caller_and_the_cache_is_under_home():
    settings = Settings.from_environment({})
    assert settings.runs_dir is None and settings.cache == (Path.home() / ".cache" / "evalh").resolve()


def test_settings_are_a_copy_read_once_and_keep_secrets_out_of_repr(monkeypatch):
    monkeypatch.setenv("EVALH_TEST_SECRET_TOKEN", "hunter2-value")
    settings = Settings.from_environment()
    monkeypatch.setenv("EVALH_TEST_SECRET_TOKEN", "changed")
    assert settings.env["EVALH_TEST_SECRET_TOKEN"] == "hunter2-value"
    assert "hunter2-value" not in repr(settings)
