"""tempdir_snapshot and git workspaces end to end on real files and a real git binary."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import fsspec
import pytest

from evalh_pipeline.models import EvalCase, RunVariant
from evalh_pipeline.workspaces.artifacts import parse_artifact
from evalh_pipeline.workspaces.base import WorkspaceContext, WorkspaceError
from evalh_pipeline.workspaces.ownership import CONTAINER_PREFIX, OWNER_FILE, create_container
from evalh_pipeline.workspaces.registry import WORKSPACES
from evalh_pipeline.store.object_storage import artifact_key, encode_key_part
from tests.mounts import one_second_clock_fs
from tests.same_stat import rewrite_keeping_stat

CASE = EvalCase.model_validate({"id": "fix/pricing bug", "input": {}})
VARIANT = RunVariant(name="agent-a", adapter="python_function")


@pytest.fixture
def eval_dir(tmp_path):
    folder = tmp_path / "eval"
    fixture = folder / "fixture"
    (fixture / "src").mkdir(parents=True)
    (fixture / "src" / "pricing.py").write_text("def price(x):\n    return x * 2\n")
    (fixture / "README.md").write_text("readme\n")
    (fixture / "data.bin").write_bytes(b"\0\1\2\3")
    (fixture / "passwd").symlink_to("/etc/passwd")
    return folder


def _adapter(eval_dir, config, tmp_path, run_id="run-1"):
    context = WorkspaceContext(eval_dir=eval_dir, runs_root=str(tmp_path / "runs"),
                               run_dir=tmp_path / "runs" / run_id, run_id=run_id)
    return WORKSPACES.get(config["type"])(config, context)


def _agent_edits(root: Path):
    (root / "src" / "pricing.py").write_text("def price(x):\n    return x * 3\n")
    (root / "README.md").unlink()
    (root / "src" / "new_test.py").write_text("assert True\n")


def test_tempdir_snapshot_full_cycle_keeps_fixture_intact(eval_dir, tmp_path):
    adapter = _adapter(eval_dir, {"type": "tempdir_snapshot", "copy_from": "fixture"}, tmp_path)
    workspace = adapter.prepare(CASE, VARIANT)
    seeded = workspace.path / "src" / "pricing.py"
    assert os.stat(seeded).st_ino != os.stat(eval_dir / "fixture" / "src" / "pricing.py").st_ino
    assert (workspace.path / "passwd").is_symlink()
    _agent_edits(workspace.path)
    artifact = adapter.collect_artifacts(workspace)
    accounting = adapter.cleanup(workspace)

    assert (artifact.diff.added, artifact.diff.removed, artifact.diff.modified) == (
        ["src/new_test.py"], ["README.md"], ["src/pricing.py"])
    assert "+    return x * 3" in artifact.diff.text_diffs["src/pricing.py"]
    folder = Path(artifact.artifacts_path)
    assert folder.is_absolute() and folder == tmp_path / "runs" / "run-1" / "artifacts" / artifact_key(CASE.id, VARIANT.name)
    assert (folder / "before" / "src" / "pricing.py").read_text().endswith("x * 2\n")
    assert (folder / "before" / "README.md").read_text() == "readme\n"
    assert not (folder / "before" / "data.bin").exists()  # unchanged files are not copied
    assert (folder / "after" / "src" / "pricing.py").read_text().endswith("x * 3\n")
    assert (folder / "after" / "passwd").is_symlink()
    assert "+    return x * 3" in (folder / "diff.txt").read_text()
    persisted = json.loads((folder / "artifact.json").read_text())
    assert persisted["artifacts_path"] == f"artifacts/{artifact_key(CASE.id, VARIANT.name)}"
    assert parse_artifact((folder / "artifact.json").read_bytes(), str(tmp_path / "runs" / "run-1")) == artifact
    # The fixture never changed; the workspace is gone; the tree was moved, not copied.
    assert (eval_dir / "fixture" / "README.md").exists()
    assert not workspace.container.exists()
    assert accounting.moved_bytes == accounting.final_bytes and accounting.leaked_bytes == 0
    assert accounting.mismatch() is None


def test_crash_mid_edit_still_collects_and_cleanup_removes_read_only_tree(eval_dir, tmp_path):
    adapter = _adapter(eval_dir, {"type": "tempdir_snapshot", "copy_from": "fixture"}, tmp_path)
    workspace = adapter.prepare(CASE, VARIANT)
    (workspace.path / "src" / "pricing.py").write_text("half written")
    (workspace.path / "src" / "pricing.py").chmod(0o400)
    (workspace.path / "src").chmod(0o500)
    workspace.path.chmod(0o500)  # a read-only root cannot be renamed elsewhere (non-root): after/ is copied
    artifact = adapter.collect_artifacts(workspace)
    accounting = adapter.cleanup(workspace)
    assert artifact.diff.modified == ["src/pricing.py"]
    assert not workspace.container.exists()
    assert accounting.leaked_bytes == 0


def test_artifact_folder_keys_are_safe_for_any_case_id():
    assert encode_key_part("..") == "%2E%2E"
    assert encode_key_part("a/b c") == "a%2Fb%20c"
    assert artifact_key("c", "v", 2) == "c/v~2"
    assert len(encode_key_part("x" * 1000)) < 200


def test_artifacts_through_memory_storage(eval_dir, tmp_path):
    url = "memory://evalh-test-artifacts"
    adapter = _adapter(eval_dir, {"type": "tempdir_snapshot", "copy_from": "fixture", "object_storage": url}, tmp_path)
    workspace = adapter.prepare(CASE, VARIANT, sample=1)
    _agent_edits(workspace.path)
    artifact = adapter.collect_artifacts(workspace)
    adapter.cleanup(workspace)
    assert artifact.artifacts_path.startswith("memory://") and artifact.artifacts_path.endswith("~1")
    fs, root = fsspec.core.url_to_fs(artifact.artifacts_path)
    assert fs.cat_file(f"{root}/after/src/pricing.py").endswith(b"x * 3\n")
    assert fs.cat_file(f"{root}/before/README.md") == b"readme\n"
    stored = parse_artifact(fs.cat_file(f"{root}/artifact.json"))
    assert stored.artifacts_path == artifact.artifacts_path and stored.diff == artifact.diff
    assert not workspace.container.exists()
    fs.rm(root, recursive=True)


def test_artifacts_through_file_url_storage(eval_dir, tmp_path):
    url = (tmp_path / "store").as_uri()
    adapter = _adapter(eval_dir, {"type": "tempdir_snapshot", "copy_from": "fixture", "object_storage": url}, tmp_path)
    workspace = adapter.prepare(CASE, VARIANT)
    _agent_edits(workspace.path)
    artifact = adapter.collect_artifacts(workspace)
    adapter.cleanup(workspace)
    folder = tmp_path / "store" / "run-1" / artifact_key(CASE.id, VARIANT.name)
    assert artifact.artifacts_path == str(folder)
    assert json.loads((folder / "artifact.json").read_text())["artifacts_path"] == str(folder)
    assert (folder / "after" / "src" / "new_test.py").exists()


def test_stale_workspace_of_killed_process_is_removed_and_live_ones_kept(eval_dir, tmp_path):
    adapter = _adapter(eval_dir, {"type": "tempdir_snapshot", "copy_from": "fixture"}, tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = create_container(adapter.base_path, "left-behind")
    marker = json.loads((stale / OWNER_FILE).read_text())
    (stale / OWNER_FILE).write_text(json.dumps({**marker, "pid": int(dead.stdout), "process_start": None}))
    (stale / "tree").mkdir()
    (stale / "tree" / "junk").write_bytes(b"x" * 100)
    live = create_container(adapter.base_path, "in-use")  # this process: alive
    foreign = adapter.base_path / f"{CONTAINER_PREFIX}999999-not-ours"
    foreign.mkdir()  # no marker: never ours to delete
    removed, freed = adapter.recover_stale()
    assert removed == 1 and freed >= 100
    assert not stale.exists() and live.exists() and foreign.exists()
    shutil.rmtree(live)


def test_git_workspace_clones_commits_and_writes_a_patch(eval_dir, tmp_path):
    fixture = eval_dir / "fixture"
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull}
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=fixture, check=True, env=env)
    subprocess.run([*git, "add", "-A"], cwd=fixture, check=True, env=env)
    subprocess.run([*git, "commit", "-q", "-m", "fixture"], cwd=fixture, check=True, env=env)
    adapter = _adapter(eval_dir, {"type": "git", "source_repo": "fixture", "source_branch": "main"}, tmp_path)
    workspace = adapter.prepare(CASE, VARIANT)
    before = workspace.metadata["git_before"]
    _agent_edits(workspace.path)
    artifact = adapter.collect_artifacts(workspace)
    adapter.cleanup(workspace)
    assert artifact.workspace_kind == "git"
    assert artifact.git_before == before and artifact.git_after not in (None, before)
    assert (artifact.diff.added, artifact.diff.removed, artifact.diff.modified) == (
        ["src/new_test.py"], ["README.md"], ["src/pricing.py"])
    assert ".git/HEAD" not in artifact.after_manifest.files
    folder = Path(artifact.artifacts_path)
    patch = (folder / "changes.patch").read_text()
    assert "+    return x * 3" in patch and "deleted file mode" in patch
    assert (folder / "before" / "README.md").read_text() == "readme\n"
    # The user's fixture repository is untouched: no new branch, same HEAD.
    branches = subprocess.run(["git", "branch", "--list"], cwd=fixture, capture_output=True, text=True, env=env)
    assert branches.stdout.split() == ["*", "main"]


def test_git_workspace_inits_a_plain_folder_only_when_allowed(eval_dir, tmp_path):
    refused = _adapter(eval_dir, {"type": "git", "source_repo": "fixture"}, tmp_path)
    with pytest.raises(WorkspaceError, match="init_if_missing"):
        refused.prepare(CASE, VARIANT)
    assert not any(refused.base_path.iterdir())  # the failed prepare cleaned up after itself
    adapter = _adapter(eval_dir, {"type": "git", "source_repo": "fixture", "init_if_missing": True}, tmp_path)
    workspace = adapter.prepare(CASE, VARIANT)
    _agent_edits(workspace.path)
    artifact = adapter.collect_artifacts(workspace)
    adapter.cleanup(workspace)
    assert artifact.diff.modified == ["src/pricing.py"] and artifact.git_after
    assert not (eval_dir / "fixture" / ".git").exists()


def test_git_workspace_survives_a_system_that_deletes_dot_git(eval_dir, tmp_path):
    adapter = _adapter(eval_dir, {"type": "git", "source_repo": "fixture", "init_if_missing": True}, tmp_path)
    workspace = adapter.prepare(CASE, VARIANT)
    shutil.rmtree(workspace.path / ".git")
    (workspace.path / "README.md").write_text("changed\n")
    artifact = adapter.collect_artifacts(workspace)
    adapter.cleanup(workspace)
    assert artifact.diff.modified == ["README.md"] and artifact.git_after is None and artifact.git_error


def test_cross_device_publish_copies_and_accounts_deleted_bytes(eval_dir, tmp_path, monkeypatch):
    import errno

    def no_rename(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    adapter = _adapter(eval_dir, {"type": "tempdir_snapshot", "copy_from": "fixture"}, tmp_path)
    workspace = adapter.prepare(CASE, VARIANT)
    _agent_edits(workspace.path)
    monkeypatch.setattr(os, "rename", no_rename)
    artifact = adapter.collect_artifacts(workspace)
    accounting = adapter.cleanup(workspace)
    assert (Path(artifact.artifacts_path) / "after" / "src" / "new_test.py").exists()
    assert accounting.moved_bytes == 0
    assert accounting.copied_bytes >= accounting.final_bytes
    assert accounting.deleted_bytes >= accounting.final_bytes and accounting.leaked_bytes == 0


def test_links_made_by_the_system_stay_links_in_manifest_and_artifacts(eval_dir, tmp_path):
    adapter = _adapter(eval_dir, {"type": "tempdir_snapshot", "copy_from": "fixture"}, tmp_path)
    workspace = adapter.prepare(CASE, VARIANT)
    (workspace.path / "src" / "pricing.py").unlink()
    (workspace.path / "src" / "pricing.py").symlink_to("/etc/passwd")
    (workspace.path / "etc").symlink_to("/etc")
    artifact = adapter.collect_artifacts(workspace)
    adapter.cleanup(workspace)
    after = Path(artifact.artifacts_path) / "after"
    assert os.readlink(after / "src" / "pricing.py") == "/etc/passwd"
    assert artifact.diff.modified == ["src/pricing.py"] and artifact.diff.added == ["etc"]
    assert not any(key.startswith("etc/") for key in artifact.after_manifest.files)
    assert os.path.exists("/etc/passwd")


def test_workspace_root_swapped_for_a_link_is_not_walked_and_still_removed(eval_dir, tmp_path):
    adapter = _adapter(eval_dir, {"type": "tempdir_snapshot", "copy_from": "fixture"}, tmp_path)
    workspace = adapter.prepare(CASE, VARIANT)
    shutil.rmtree(workspace.path)
    workspace.path.symlink_to("/etc")
    with pytest.raises(ValueError, match="not a real folder"):
        adapter.collect_artifacts(workspace)
    adapter.cleanup(workspace)
    assert not workspace.container.exists() and os.path.exists("/etc/passwd")


def test_non_utf8_names_round_trip_through_artifact_json_and_memory_storage(eval_dir, tmp_path):
    odd = os.fsdecode(b"r\xe9sum\xe9.txt")
    url = "memory://evalh-test-odd-names"
    adapter = _adapter(eval_dir, {"type": "tempdir_snapshot", "copy_from": "fixture", "object_storage": url}, tmp_path)
    workspace = adapter.prepare(CASE, VARIANT)
    (workspace.path / odd).write_bytes(b"cv\n")
    artifact = adapter.collect_artifacts(workspace)
    adapter.cleanup(workspace)
    assert artifact.diff.added == [odd]
    fs, root = fsspec.core.url_to_fs(artifact.artifacts_path)
    stored = parse_artifact(fs.cat_file(f"{root}/artifact.json"))
    assert stored.diff.added == [odd] and os.fsencode(stored.diff.added[0]) == b"r\xe9sum\xe9.txt"
    assert fs.cat_file(f"{root}/after/r%e9sum%e9.txt") == b"cv\n"
    fs.rm(root, recursive=True)


def test_huge_file_change_is_listed_without_a_body(eval_dir, tmp_path):
    config = {"type": "tempdir_snapshot", "copy_from": "fixture", "max_diff_file_bytes": 1000}
    adapter = _adapter(eval_dir, config, tmp_path)
    workspace = adapter.prepare(CASE, VARIANT)
    (workspace.path / "big.log").write_text("line\n" * 10_000)
    artifact = adapter.collect_artifacts(workspace)
    adapter.cleanup(workspace)
    assert artifact.diff.added == ["big.log"] and "big.log" not in artifact.diff.text_diffs
    assert artifact.diff_notes == {"too_large": ["big.log"]}
    assert "File big.log changed (too large for a text diff)" in (Path(artifact.artifacts_path) / "diff.txt").read_text()


def _early_in_a_second() -> None:
    """Wait (at most a second) until the clock is 0.2-0.5 s into a second. Only so that a stat
    cache, were one used, would be fooled: the seeding, the snapshot and the rewrite then share
    one second of a one-second clock. The test's assertion holds at any timing."""
    while not 0.2 <= time.time() % 1 < 0.5:
        time.sleep(0.01)


def test_a_same_size_rewrite_in_the_second_of_seeding_is_a_modification_on_a_one_second_clock(eval_dir, tmp_path):
    # ext4 with 128-byte inodes (like ext3, FAT, many NFS servers) keeps whole seconds: a system
    # that rewrites a seeded file with the same size and puts its mtime back within that second
    # leaves size, mtime, ctime and inode as the before-manifest saw them. Only the bytes differ.
    with one_second_clock_fs(tmp_path / "coarse", tmp_path / "coarse.img") as base:
        adapter = _adapter(eval_dir, {"type": "tempdir_snapshot", "copy_from": "fixture", "base_path": str(base)},
                           tmp_path)
        _early_in_a_second()
        workspace = adapter.prepare(CASE, VARIANT)
        try:
            rewrite_keeping_stat(workspace.path / "src" / "pricing.py", b"x * 2", b"x * 3")
            artifact = adapter.collect_artifacts(workspace)
        finally:
            adapter.cleanup(workspace)

    assert artifact.diff.modified == ["src/pricing.py"]
    assert "+    return x * 3" in artifact.diff.text_diffs["src/pricing.py"]
    folder = Path(artifact.artifacts_path)
    assert (folder / "after" / "src" / "pricing.py").read_text().endswith("x * 3\n")
