"""What kind of file a path is, and reads that never open a FIFO or a device."""

from __future__ import annotations

import os

import pytest

from evalh_pipeline.common.file_kinds import NotARegularFile, not_a_file_problem, read_regular


def test_a_regular_file_reads_and_has_no_problem(tmp_path):
    (tmp_path / "f").write_bytes(b"data")
    assert read_regular(tmp_path / "f") == b"data" and not_a_file_problem(tmp_path / "f") is None


def test_a_fifo_is_named_as_such_and_never_opened(tmp_path):
    os.mkfifo(tmp_path / "pipe")  # a read would block forever: no writer comes
    with pytest.raises(NotARegularFile, match=r"is a named pipe \(FIFO\), not a file"):
        read_regular(tmp_path / "pipe")
    assert not_a_file_problem(tmp_path / "pipe") == f"{tmp_path / 'pipe'} is a named pipe (FIFO), not a file"


def test_folders_devices_and_missing_paths_are_told_apart(tmp_path):
    assert not_a_file_problem(tmp_path) == f"{tmp_path} is a directory, not a file"
    assert not_a_file_problem("/dev/null") == "/dev/null is a character device, not a file"
    assert not_a_file_problem(tmp_path / "nope") == f"file not found: {tmp_path / 'nope'}"


def test_a_link_is_refused_when_links_are_not_followed(tmp_path):
    (tmp_path / "f").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "f")
    assert read_regular(tmp_path / "link") == b"x"
    with pytest.raises(NotARegularFile, match="symbolic link"):
        read_regular(tmp_path / "link", follow_symlinks=False)
