"""evalh's own git calls: bounded in time, and blind to the config the system can write."""

from __future__ import annotations

import os
import time

import pytest

from evalh_pipeline.workspaces.base import WorkspaceError
from evalh_pipeline.workspaces.git import restore_repository_config, run_git


def test_a_git_call_that_blocks_is_killed_at_its_timeout(tmp_path):
    os.mkfifo(tmp_path / "pipe")  # git opens it to hash it, and waits for a writer forever
    started = time.monotonic()
    with pytest.raises(WorkspaceError, match="did not finish within 1 s"):
        run_git(tmp_path, "hash-object", "pipe", timeout=1)
    assert time.monotonic() - started < 60


def test_the_repository_config_is_put_back_whatever_the_system_wrote(tmp_path):
    run_git(tmp_path, "init", "-q")
    original = (tmp_path / ".git" / "config").read_bytes()
    (tmp_path / ".git" / "config").write_text("[core]\n\tfsmonitor = /bin/false\n[include]\n\tpath = other\n")
    (tmp_path / ".git" / "commondir").write_text("/elsewhere\n")
    restore_repository_config(tmp_path, original)
    assert (tmp_path / ".git" / "config").read_bytes() == original
    assert not (tmp_path / ".git" / "commondir").exists()


def test_a_config_swapped_for_a_link_is_replaced_not_written_through(tmp_path):
    run_git(tmp_path, "init", "-q")
    original = (tmp_path / ".git" / "config").read_bytes()
    outside = tmp_path / "outside.cfg"
    outside.write_text("mine\n")
    (tmp_path / ".git" / "config").unlink()
    (tmp_path / ".git" / "config").symlink_to(outside)
    restore_repository_config(tmp_path, original)
    assert outside.read_text() == "mine\n" and not (tmp_path / ".git" / "config").is_symlink()


def test_a_git_folder_replaced_by_a_link_is_refused(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / ".git").symlink_to(tmp_path / "real")
    with pytest.raises(WorkspaceError, match="replaced the workspace's .git"):
        restore_repository_config(tmp_path / "tree", b"")
    assert list((tmp_path / "real").iterdir()) == []
