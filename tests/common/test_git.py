"""git in a repository evalh does not own: nothing written back, no lock, bounded in time."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from evalh_pipeline.common.git import GitError, run_git

pytestmark = pytest.mark.integration


def _user_git(repo, *args):
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=u", "-c", "user.email=u@example.com", *args],
                   check=True, capture_output=True, timeout=60)


@pytest.fixture
def stale_index_repo(tmp_path):
    """A committed repository whose index no longer matches the files' stat data: a plain
    ``git status`` would refresh it, taking ``index.lock`` and rewriting ``.git/index``."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _user_git(repo, "init", "-q")
    for i in range(50):
        (repo / f"f{i}.txt").write_text(f"{i}\n")
    _user_git(repo, "add", "-A")
    _user_git(repo, "commit", "-q", "-m", "files")
    old = time.time() - 3600
    for i in range(50):
        os.utime(repo / f"f{i}.txt", (old, old))
    return repo


def _index(repo):
    path = repo / ".git" / "index"
    return path.read_bytes(), path.stat().st_mtime_ns


def test_status_in_a_users_repository_writes_nothing_back(stale_index_repo):
    before = _index(stale_index_repo)
    done = run_git(stale_index_repo, "status", "--porcelain=v1", "-z", "--untracked-files=all", timeout=60)
    assert done.returncode == 0 and done.stdout == b""
    assert _index(stale_index_repo) == before
    assert not (stale_index_repo / ".git" / "index.lock").exists()
    # The same status as the user runs it does refresh the index: what the call above avoided.
    _user_git(stale_index_repo, "status", "--porcelain")
    assert _index(stale_index_repo) != before


def test_a_git_call_that_blocks_is_killed_with_one_line_naming_it(tmp_path):
    os.mkfifo(tmp_path / "pipe")  # git opens it to hash it, and waits for a writer forever
    with pytest.raises(GitError) as info:
        run_git(tmp_path, "hash-object", "pipe", timeout=1)
    assert str(info.value) == f"git hash-object pipe in {tmp_path} did not finish within 1 s and was killed"


def test_a_failing_git_call_says_why_on_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    with pytest.raises(GitError, match=r"^git rev-parse HEAD failed: fatal: not a git repository[^\n]*$"):
        run_git(tmp_path, "rev-parse", "HEAD", timeout=60)
