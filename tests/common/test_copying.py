"""copy_tree / copy_file: copies keep holes, links and modes."""

from __future__ import annotations

import os

from evalh_pipeline.common.copying import copy_file, copy_tree

SIZE = 256 << 20


def test_a_sparse_file_is_copied_whole_and_stays_sparse(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    with open(source / "disk.img", "wb") as f:
        f.write(b"head")
        f.seek(SIZE // 2)
        f.write(b"middle")
        f.truncate(SIZE)
    (source / "plain.txt").write_text("text")
    os.chmod(source / "plain.txt", 0o640)
    (source / "link").symlink_to("plain.txt")

    copy_tree(source, tmp_path / "dst")

    copied = tmp_path / "dst" / "disk.img"
    assert copied.stat().st_size == SIZE and copied.stat().st_blocks * 512 < (1 << 20)
    with open(copied, "rb") as f:
        assert f.read(4) == b"head" and (f.seek(SIZE // 2), f.read(6))[1] == b"middle"
    assert (tmp_path / "dst" / "plain.txt").read_text() == "text"
    assert (tmp_path / "dst" / "plain.txt").stat().st_mode & 0o777 == 0o640
    assert os.readlink(tmp_path / "dst" / "link") == "plain.txt"


def test_a_file_that_is_all_hole_copies_to_an_all_hole_file(tmp_path):
    with open(tmp_path / "empty.img", "wb") as f:
        f.truncate(SIZE)
    copy_file(tmp_path / "empty.img", tmp_path / "copy.img")
    assert (tmp_path / "copy.img").stat().st_size == SIZE
    assert (tmp_path / "copy.img").stat().st_blocks * 512 < (1 << 20)


def test_special_files_are_left_out_of_copies_never_opened(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "kept.txt").write_text("kept\n")
    os.mkfifo(source / "pipe")  # copying it would block (or raise) before the fix
    copy_tree(source, tmp_path / "dst")
    assert sorted(p.name for p in (tmp_path / "dst").iterdir()) == ["kept.txt"]
    assert copy_file(source / "pipe", tmp_path / "alone") == str(tmp_path / "alone")
    assert not (tmp_path / "alone").exists()
