"""${VAR} expansion, YAML 1.2 booleans, and path resolution in load_eval."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from evalh_pipeline.config import ConfigError
from evalh_pipeline.runner.loading import load_eval


def write(folder: Path, *, dataset_path: str = "cases.jsonl", extra: str = "", output: str = "",
          cases_at: Path | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    cases_file = cases_at or folder / "cases.jsonl"
    cases_file.parent.mkdir(parents=True, exist_ok=True)
    cases_file.write_text('{"id": "a"}\n')
    text = textwrap.dedent(f"""\
        eval:
          name: demo
        dataset:
          type: jsonl
          path: {dataset_path}
        systems:
          - name: base
            adapter: python_function
            target: agent:run
        """) + extra + output
    path = folder / "eval.yaml"
    path.write_text(text)
    return path


# --- ${VAR} expansion -------------------------------------------------------------------

def test_var_is_expanded_from_the_environment(tmp_path):
    path = write(tmp_path, extra="metadata:\n  model: ${MODEL_NAME}\n  url: http://${HOST}:8080/v1\n")
    spec = load_eval(path, env={"MODEL_NAME": "gpt-x", "HOST": "localhost"})
    assert spec.config.metadata == {"model": "gpt-x", "url": "http://localhost:8080/v1"}


def test_default_is_used_only_when_the_var_is_unset(tmp_path):
    path = write(tmp_path, extra="metadata:\n  a: ${UNSET_A:-fallback}\n  b: ${SET_B:-fallback}\n  c: ${UNSET_C:-}\n")
    spec = load_eval(path, env={"SET_B": "real"})
    assert spec.config.metadata == {"a": "fallback", "b": "real", "c": ""}


def test_missing_var_without_default_is_an_error_with_line_key_and_name(tmp_path):
    path = write(tmp_path, extra="metadata:\n  model: ${MODEL_NAME}\n")
    with pytest.raises(ConfigError) as info:
        load_eval(path, env={})
    message = str(info.value)
    assert message.startswith("eval.yaml:11 metadata.model: environment variable 'MODEL_NAME' is not set")
    assert "${MODEL_NAME:-default}" in message


def test_missing_var_inside_a_list_reports_the_index(tmp_path):
    path = write(tmp_path, extra="metadata:\n  tags:\n    - ok\n    - ${NOPE}\n")
    with pytest.raises(ConfigError) as info:
        load_eval(path, env={})
    assert str(info.value).startswith("eval.yaml:13 metadata.tags[1]:")


def test_lowercase_var_syntax_is_left_literal(tmp_path):
    path = write(tmp_path, extra="metadata:\n  note: ${lower_case} and ${Mixed}\n")
    spec = load_eval(path, env={"lower_case": "x", "Mixed": "y"})
    assert spec.config.metadata["note"] == "${lower_case} and ${Mixed}"


def test_secret_looking_vars_are_recorded_as_secret_values(tmp_path):
    path = write(tmp_path, extra="metadata:\n  key: ${OPENAI_API_KEY}\n  region: ${REGION}\n")
    spec = load_eval(path, env={"OPENAI_API_KEY": "sk-123", "REGION": "eu"})
    assert spec.secret_values == frozenset({"sk-123"})


# --- YAML 1.2 booleans ------------------------------------------------------------------

def test_yaml_on_key_in_retry_stays_a_string_key(tmp_path):
    path = write(tmp_path, extra="run:\n  retry: {max_attempts: 3, on: [timeout, adapter_error]}\n")
    assert load_eval(path, env={}).config.run.retry.on == ["timeout", "adapter_error"]


def test_yaml_yes_no_on_off_values_stay_strings_and_true_is_boolean(tmp_path):
    path = write(tmp_path, extra="metadata: {a: yes, b: no, c: on, d: off, e: y, f: true, g: False}\n")
    assert load_eval(path, env={}).config.metadata == {
        "a": "yes", "b": "no", "c": "on", "d": "off", "e": "y", "f": True, "g": False,
    }


# --- paths ------------------------------------------------------------------------------

def test_relative_dataset_path_resolves_against_the_eval_folder_not_cwd(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    path = write(tmp_path / "ev", dataset_path="data/cases.jsonl", cases_at=tmp_path / "ev" / "data" / "cases.jsonl")
    assert load_eval(path, env={}).dataset_path == (tmp_path / "ev" / "data" / "cases.jsonl").resolve()


def test_relative_dataset_path_falls_back_to_the_working_directory(tmp_path, monkeypatch):
    cwd = tmp_path / "project"
    (cwd / "data").mkdir(parents=True)
    (cwd / "data" / "shared.jsonl").write_text('{"id": "a"}\n')
    monkeypatch.chdir(cwd)
    path = write(tmp_path / "evals" / "one", dataset_path="data/shared.jsonl")
    assert load_eval(path, env={}).dataset_path == (cwd / "data" / "shared.jsonl").resolve()


def test_eval_folder_wins_when_both_eval_folder_and_cwd_have_the_dataset(tmp_path, monkeypatch):
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "cases.jsonl").write_text('{"id": "cwd"}\n')
    monkeypatch.chdir(cwd)
    path = write(tmp_path / "ev")
    assert load_eval(path, env={}).dataset_path == (tmp_path / "ev" / "cases.jsonl").resolve()


def test_output_url_with_an_unknown_protocol_is_refused_with_file_line_and_key(tmp_path):
    path = write(tmp_path, output="output:\n  - {path: runs}\n  - {type: local_files, path: 'nosuch://bucket/runs'}\n")
    with pytest.raises(ConfigError, match=r"eval\.yaml:12 output\[1\]\.path: 'nosuch://bucket/runs': "
                                          r"unknown URL protocol 'nosuch'"):
        load_eval(path, env={})


def test_output_url_whose_backend_is_missing_names_the_extra(tmp_path):
    pytest.importorskip("fsspec")
    try:
        import s3fs  # noqa: F401
        pytest.skip("s3fs is installed")
    except ImportError:
        pass
    path = write(tmp_path, output="output:\n  - {type: local_files, path: 's3://bucket/evals/runs'}\n")
    with pytest.raises(ConfigError, match=r"output\[0\]\.path: 's3://bucket/evals/runs': the s3:// backend is not installed"):
        load_eval(path, env={})


def test_single_output_mapping_is_accepted_and_a_file_url_gets_a_local_working_copy(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALH_CACHE_DIR", str(tmp_path / "cache"))
    path = write(tmp_path, output="output: {type: local_files, path: 'file:///tmp/x/runs'}\n")
    spec = load_eval(path, env={})
    assert len(spec.config.output) == 1 and spec.outputs == ("file:///tmp/x/runs",)
    assert Path(spec.runs_root).parent == (tmp_path / "cache" / "runs").resolve()


def test_outputs_after_the_first_are_mirrors_and_a_local_canonical_is_the_runs_root(tmp_path):
    path = write(tmp_path, output=f"output:\n  - {{path: {tmp_path / 'runs'}}}\n  - {{path: 'memory://mirror/runs'}}\n")
    spec = load_eval(path, env={})
    assert spec.runs_root == str(tmp_path / "runs") and spec.outputs == (str(tmp_path / "runs"), "memory://mirror/runs")


def test_relative_output_folder_resolves_against_the_eval_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "ev", output="output: {path: my_runs}\n")
    assert load_eval(path, env={}).runs_root == str((tmp_path / "ev" / "my_runs").resolve())


def test_default_output_is_runs_in_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALH_RUNS_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "ev")
    assert load_eval(path, env={}).runs_root == str((tmp_path / "runs").resolve())


def test_workspace_with_a_missing_fixture_is_refused(tmp_path):
    path = write(tmp_path, output="workspace: {type: tempdir_snapshot, copy_from: ./fixture}\n")
    with pytest.raises(ConfigError, match=r"workspace.copy_from: fixture folder not found"):
        load_eval(path, env={})
