"""Settings: the environment evalh reads, read once and then independent of os.environ."""

import io
import tokenize
from pathlib import Path

import evalh_pipeline
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


# The only places below the CLI and the Dagster layer that may read the process environment,
# each a default for code built directly (tests, scripts, plugin authors), never the path the
# engine takes: the runner hands every one of them the settings' environment.
ENVIRONMENT_READERS = {
    "common/settings.py": "Settings.from_environment: the one reader",
    "common/context.py": "EvaluatorContext() built without an env",
    "systems/base.py": "SystemContext.host_env when no env was handed in",
    "embedders/base.py": "an Embedder built without an env",
    "common/git.py": "git's child environment in a repository evalh does not own, outer git's variables dropped",
    "common/containers.py": "the docker/podman CLI's child environment (DOCKER_HOST, PATH) when none is handed in",
    "runner/deployment.py": "the check before a run reads what each Dagster process will read when it starts: "
                            "$EVALH_CELERY_BROKER and the {env: ...} values of the instance's dagster.yaml",
}


def test_the_viewer_url_is_configured_or_the_default_port_of_dev_ui():
    assert Settings.from_environment({}).viewer_url == "http://127.0.0.1:8790"
    assert Settings.from_environment({"EVALH_VIEWER_URL": "  "}).viewer_url == "http://127.0.0.1:8790"
    assert Settings.from_environment({"EVALH_VIEWER_URL": " http://viewer.example:9000/ "}).viewer_url == (
        "http://viewer.example:9000")


def _reads_environment(path: Path) -> bool:
    """Whether the code (not comments or docstrings) of ``path`` names os.environ or os.getenv."""
    tokens = [t.string for t in tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
              if t.type in (tokenize.NAME, tokenize.OP)]
    return any(tokens[i:i + 3] in (["os", ".", "environ"], ["os", ".", "getenv"]) for i in range(len(tokens)))


def test_the_engine_reads_the_environment_only_where_listed():
    root = Path(evalh_pipeline.__file__).parent
    readers = {path.relative_to(root).as_posix() for path in root.rglob("*.py")
               if path.relative_to(root).parts[0] not in ("cli", "defs") and _reads_environment(path)}
    assert readers == set(ENVIRONMENT_READERS)


def test_the_dagster_url_is_configured_or_the_address_of_dev_ui():
    assert Settings.from_environment({}).dagster_url == "http://127.0.0.1:3000"
    assert Settings.from_environment({"EVALH_DAGSTER_URL": " "}).dagster_url == "http://127.0.0.1:3000"
    assert Settings.from_environment({"EVALH_DAGSTER_URL": "https://dagster.example/x/"}).dagster_url == (
        "https://dagster.example/x")
