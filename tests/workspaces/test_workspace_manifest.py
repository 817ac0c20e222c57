"""Manifests and diffs on real files: links, odd names, permissions, deep trees, content as the only evidence."""

from __future__ import annotations

import os
import stat

import pytest

from evalh_pipeline.workspaces.diffing import DiffLimits, build_file_diff, compare_manifests, render_diff_text
from evalh_pipeline.workspaces.manifest import hash_bytes, take_snapshot
from evalh_pipeline.common.trees import remove_tree
from tests.same_stat import rewrite_keeping_stat


def _read(root):
    def read(key):
        path = root / key
        return None if path.is_symlink() else path.read_bytes()
    return read


def test_symlink_is_recorded_as_link_and_never_followed(tmp_path):
    (tmp_path / "passwd").symlink_to("/etc/passwd")
    (tmp_path / "outside").symlink_to(tmp_path.parent)
    entries = take_snapshot(tmp_path).manifest.files
    assert set(entries) == {"passwd", "outside"}  # the linked folder is not walked
    link = entries["passwd"]
    assert stat.S_ISLNK(link.mode)
    assert link.size == len("/etc/passwd")
    assert link.sha256 == hash_bytes(b"/etc/passwd")


def test_non_utf8_empty_and_read_only_files_are_listed(tmp_path):
    odd = os.fsdecode(b"caf\xe9.txt")
    (tmp_path / odd).write_bytes(b"latin-1 name")
    (tmp_path / "empty").write_bytes(b"")
    locked = tmp_path / "locked.txt"
    locked.write_text("read only")
    locked.chmod(0o444)
    files = take_snapshot(tmp_path).manifest.files
    assert os.fsencode(odd) in {os.fsencode(k) for k in files}
    assert files["empty"].size == 0 and files["empty"].sha256 == hash_bytes(b"")
    assert files["locked.txt"].sha256 == hash_bytes(b"read only")


@pytest.mark.integration
def test_deep_tree_and_fifo_are_walked_without_hanging(tmp_path):
    deep = tmp_path
    for i in range(300):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (deep / "leaf.txt").write_text("bottom")
    os.mkfifo(tmp_path / "pipe")
    files = take_snapshot(tmp_path).manifest.files
    assert files["pipe"].sha256 == "special:fifo"
    assert any(key.endswith("/d299/leaf.txt") for key in files)
    assert remove_tree(tmp_path / "d0") == len("bottom")


def test_every_walk_hashes_every_file_so_a_same_size_edit_is_seen(tmp_path):
    for i in range(40):
        (tmp_path / f"f{i}.txt").write_text(f"file {i}\n")
    before = take_snapshot(tmp_path)
    (tmp_path / "f3.txt").write_text("file 3\n")  # rewritten, same content
    rewrite_keeping_stat(tmp_path / "f4.txt", b"file 4", b"FILE 4")  # new content, stat put back
    after = take_snapshot(tmp_path)
    assert before.hashed_files == after.hashed_files == 40
    assert after.manifest.files["f4.txt"].sha256 == hash_bytes(b"FILE 4\n")
    added, removed, modified = compare_manifests(before.manifest, after.manifest)
    assert (added, removed, modified) == ([], [], ["f4.txt"])


def test_text_binary_and_capped_diffs(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    for root in (old, new):
        root.mkdir()
    (old / "a.py").write_text("x = 1\ny = 2\n")
    (new / "a.py").write_text("x = 1\ny = 3\n")
    (old / "blob.bin").write_bytes(b"\0\1\2")
    (new / "blob.bin").write_bytes(b"\0\1\3")
    (old / "big.txt").write_text("line\n" * 100)
    (new / "big.txt").write_text("LINE\n" * 100)
    (new / "added.txt").write_text("hello\n")
    before, after = take_snapshot(old).manifest, take_snapshot(new).manifest
    diff, notes = build_file_diff(before, after, _read(old), _read(new), DiffLimits(max_diff_bytes=200))
    assert diff.added == ["added.txt"] and diff.modified == ["a.py", "big.txt", "blob.bin"]
    assert "-y = 2\n+y = 3\n" in diff.text_diffs["a.py"]
    assert "blob.bin" not in diff.text_diffs and notes.binary == ["blob.bin"]
    assert notes.truncated == ["big.txt"] and diff.text_diffs["big.txt"].endswith("[diff truncated by evalh]\n")
    text = render_diff_text(diff, notes)
    assert "Binary files a/blob.bin and b/blob.bin differ" in text and "+++ b/added.txt" in text


def test_remove_tree_handles_read_only_folders_and_counts_bytes(tmp_path):
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "f").write_bytes(b"12345")
    (root / "sub" / "f").chmod(0o400)
    (root / "sub").chmod(0o500)
    (root / "link").symlink_to("/etc/passwd")
    assert remove_tree(root) == 5 + len("/etc/passwd")
    assert not root.exists()
    assert os.path.exists("/etc/passwd")
