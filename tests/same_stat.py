"""Rewriting a file so that its stat says nothing changed: for the tests that content is the only evidence.

What a copy preserving times (`cp -p`, `rsync -a --inplace`, an S3 sync), `touch -d` or a coarse
file-system clock leaves: new bytes, and the same size, mtime and inode.
"""

from __future__ import annotations

import os
from pathlib import Path


def rewrite_keeping_stat(path: Path, old: bytes, new: bytes) -> None:
    """Replace the one occurrence of ``old`` in ``path`` by ``new`` (same length) in place,
    then put the file's times back; asserts size, mtime and inode are as they were."""
    assert len(old) == len(new) and old != new
    before = os.stat(path)
    data = path.read_bytes()
    assert data.count(old) >= 1, f"{old!r} not in {path}"
    with open(path, "r+b") as handle:  # in place: the same inode
        handle.write(data.replace(old, new, 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert path.read_bytes() != data
