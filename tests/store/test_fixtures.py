"""Fixture fingerprints: the dataset, the eval's git HEAD and the workspace's copy_from tree."""

from __future__ import annotations

import subprocess
from dataclasses import replace

from evalh_pipeline.config import load_eval
from evalh_pipeline.config.schema import WorkspaceConfig
from evalh_pipeline.store.fixtures import fixture_fingerprint, tree_sha256, workspace_version
from tests.conftest import write_eval


def _with_copy_from(spec, folder):
    """``spec`` with ``workspace.copy_from`` (set on the model: the loader's support is another change)."""
    config = spec.config.model_copy(update={"workspace": WorkspaceConfig(type="tempdir_snapshot", copy_from=str(folder))})
    return replace(spec, config=config)


def test_tree_hash_follows_contents_and_names_not_times(tmp_path):
    tree = tmp_path / "tree"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "a.py").write_text("x = 1\n")
    (tree / "README").write_text("hi\n")
    first = tree_sha256(tree)
    (tree / "README").write_text("hi\n")  # rewritten, same bytes
    assert tree_sha256(tree) == first
    (tree / "src" / "a.py").write_text("x = 2\n")
    assert tree_sha256(tree) != first
    (tree / "src" / "a.py").write_text("x = 1\n")
    (tree / "src" / "a.py").rename(tree / "src" / "b.py")
    assert tree_sha256(tree) != first


def test_a_copy_from_tree_changes_the_fingerprint_key(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    tree = tmp_path / "fixture_repo"
    tree.mkdir()
    (tree / "main.py").write_text("print(1)\n")
    spec = load_eval(write_eval(tmp_path / "toy", cases=2))
    plain = fixture_fingerprint(spec)
    assert plain.workspace == "" and plain.key == f"nogit:{plain.dataset_hash}"

    with_tree = fixture_fingerprint(_with_copy_from(spec, "../fixture_repo"))
    assert with_tree.workspace == f"sha256:{tree_sha256(tree)}"
    assert with_tree.key == f"{plain.key}:{with_tree.workspace}"
    (tree / "main.py").write_text("print(2)\n")
    assert fixture_fingerprint(_with_copy_from(spec, "../fixture_repo")).key != with_tree.key


def test_a_copy_from_tree_in_git_is_versioned_by_its_head(tmp_path):
    tree = tmp_path / "fixture_repo"
    tree.mkdir()
    (tree / "main.py").write_text("print(1)\n")
    for args in (["init", "-q"], ["config", "user.email", "t@example.com"], ["config", "user.name", "t"],
                 ["config", "commit.gpgsign", "false"], ["add", "-A"], ["commit", "-q", "-m", "one"]):
        subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True, timeout=30)
    head = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True, timeout=30).stdout.strip()
    assert workspace_version(tree) == f"git:{head}"
    assert workspace_version(tmp_path / "missing") == ""
