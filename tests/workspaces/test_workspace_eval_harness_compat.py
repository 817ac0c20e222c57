"""eval-harness 1.0 workspaces load unchanged: git `copy_from`/`init_git`, fixtures beside the working directory."""

from __future__ import annotations

import pytest

from evalh_pipeline.runner.loading import load_eval
from evalh_pipeline.store.fixtures import copy_from_path
from evalh_pipeline.workspaces.git import GitWorkspaceConfig
from tests.support.evals import write_eval


def test_copy_from_names_the_source_and_makes_it_a_repository_by_default():
    config = GitWorkspaceConfig.model_validate({"type": "git", "copy_from": "fixture"})
    assert (config.source_repo, config.init_if_missing) == ("fixture", True)


def test_init_git_false_is_kept():
    config = GitWorkspaceConfig.model_validate({"type": "git", "copy_from": "fixture", "init_git": False})
    assert config.init_if_missing is False


def test_source_repo_wins_and_init_git_alone_is_still_unknown():
    with pytest.raises(ValueError, match="init_git"):
        GitWorkspaceConfig.model_validate({"type": "git", "source_repo": "fixture", "init_git": True})


def test_an_eval_harness_git_workspace_loads_and_is_fingerprinted(tmp_path):
    folder = tmp_path / "toy"
    (folder / "fixture").mkdir(parents=True)
    (folder / "fixture" / "a.txt").write_text("a\n")
    spec = load_eval(write_eval(folder, extra_yaml="workspace:\n  type: git\n  copy_from: fixture\n"))
    assert copy_from_path(spec) == (folder / "fixture").resolve()


def test_a_fixture_beside_the_working_directory_is_found_as_eval_harness_does(tmp_path, monkeypatch):
    folder = tmp_path / "evals" / "toy"
    (tmp_path / "fixture").mkdir()
    (tmp_path / "fixture" / "a.txt").write_text("a\n")
    monkeypatch.chdir(tmp_path)
    spec = load_eval(write_eval(folder, extra_yaml="workspace:\n  type: tempdir_snapshot\n  copy_from: fixture\n"))
    assert copy_from_path(spec) == (tmp_path / "fixture").resolve()
