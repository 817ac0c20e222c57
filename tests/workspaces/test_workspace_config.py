"""workspace: in eval.yaml is validated by the workspace type's own config model."""

from __future__ import annotations

import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.config.errors import ConfigError

EVAL = """\
eval:
  name: ws_config
dataset:
  type: jsonl
  path: cases.jsonl
systems:
  - name: agent
    adapter: python_function
    target: agent:run
workspace:
{workspace}
"""


def _load(tmp_path, workspace: str):
    (tmp_path / "cases.jsonl").write_text('{"id": "c1", "input": {}}\n')
    (tmp_path / "fixture").mkdir(exist_ok=True)
    path = tmp_path / "eval.yaml"
    path.write_text(EVAL.format(workspace=workspace))
    return load_eval(path)


def _problems(tmp_path, workspace: str) -> str:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, workspace)
    return str(info.value)


def test_valid_tempdir_snapshot_and_git_workspaces_load(tmp_path):
    spec = _load(tmp_path, "  type: tempdir_snapshot\n  copy_from: ./fixture\n  object_storage: file:///tmp/x\n")
    assert spec.config.workspace.type == "tempdir_snapshot"
    spec = _load(tmp_path, "  type: git\n  source_repo: fixture\n  init_if_missing: true\n")
    assert spec.config.workspace.type == "git"


def test_path_traversal_and_absolute_paths_are_refused(tmp_path):
    assert "must not contain '..'" in _problems(tmp_path, "  type: tempdir_snapshot\n  copy_from: ../elsewhere\n")
    message = _problems(tmp_path, "  type: git\n  source_repo: /etc\n")
    assert "eval.yaml:" in message and "workspace.source_repo" in message and "relative" in message


def test_missing_fixture_unknown_key_and_unknown_type_are_reported_with_their_line(tmp_path):
    message = _problems(tmp_path, "  type: tempdir_snapshot\n  copy_from: nowhere\n")
    assert "eval.yaml:12" in message and "fixture folder not found" in message
    # An unknown key is what eval-harness ignores: a warning naming the closest key.
    (warning,) = _load(tmp_path, "  type: tempdir_snapshot\n  copy_form: fixture\n").warnings
    assert "workspace.copy_form" in str(warning) and "did you mean 'copy_from'?" in str(warning)
    message = _problems(tmp_path, "  type: podman_volume\n")
    assert "unknown workspace type 'podman_volume'" in message and "docker_volume" in message
    assert "workspace.image: required key is missing" in _problems(tmp_path, "  type: docker_volume\n")
    assert "must be a URL" in _problems(tmp_path, "  type: tempdir_snapshot\n  object_storage: /tmp/x\n")
