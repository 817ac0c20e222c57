"""Copy workspace trees without filling holes: a sparse file stays sparse in the copy.

``shutil.copy2`` copies every byte, so a 1 GB sparse file (a preallocated database, a
core file) becomes 1 GB of real disk wherever a tree cannot be renamed into place (a
``base_path`` or an artifacts folder on another file system). Here a file with holes is
copied region by region (``SEEK_DATA``/``SEEK_HOLE``) and its size set with ``truncate``,
so the holes stay holes; other files take ``shutil.copy2``'s fast path. File systems
without hole reporting show one data region, which is a plain copy.

FIFOs, sockets and devices are never copied (nor opened: copying a FIFO blocks, copying a
device such as ``/dev/zero`` never ends). The workspace manifests record them by kind; a
copied tree simply does not hold them.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from evalh_pipeline.common.file_kinds import is_special

_CHUNK = 8 << 20


def copy_file(src: str | os.PathLike[str], dst: str | os.PathLike[str], *, follow_symlinks: bool = True) -> str:
    """``shutil.copy2`` that keeps holes (same signature, so it can be ``copytree``'s copy_function).

    A special file is skipped: nothing is created at ``dst``.
    """
    st = os.stat(src, follow_symlinks=follow_symlinks)
    if is_special(st.st_mode):
        return os.fspath(dst)
    if not _has_holes(st) or not hasattr(os, "SEEK_DATA"):
        return os.fspath(shutil.copy2(src, dst, follow_symlinks=follow_symlinks))
    if os.path.isdir(dst):
        dst = os.path.join(dst, os.path.basename(src))
    with open(src, "rb") as source, open(dst, "wb") as target:
        _copy_data_regions(source.fileno(), target.fileno(), st.st_size)
        target.truncate(st.st_size)
    shutil.copystat(src, dst, follow_symlinks=follow_symlinks)
    return os.fspath(dst)


def copy_tree(src: Path, dst: Path, *, dirs_exist_ok: bool = False) -> None:
    """``shutil.copytree`` with links kept as links, holes kept as holes and special files left out."""
    shutil.copytree(src, dst, symlinks=True, copy_function=copy_file, dirs_exist_ok=dirs_exist_ok,
                    ignore=special_files)


def special_files(folder: str | os.PathLike[str], names: list[str]) -> set[str]:
    """The FIFOs, sockets and devices among ``names`` in ``folder`` (a ``copytree`` ``ignore``)."""
    found = set()
    for name in names:
        try:
            mode = os.lstat(os.path.join(folder, name)).st_mode
        except OSError:
            continue
        if is_special(mode):
            found.add(name)
    return found


def _has_holes(st: os.stat_result) -> bool:
    # Fewer allocated bytes than the size says: some of the file is a hole.
    blocks = getattr(st, "st_blocks", None)
    return blocks is not None and blocks * 512 < st.st_size


def _copy_data_regions(fd_in: int, fd_out: int, size: int) -> None:
    offset = 0
    while offset < size:
        try:
            start = os.lseek(fd_in, offset, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole is left
                return
            raise
        end = os.lseek(fd_in, start, os.SEEK_HOLE)
        os.lseek(fd_in, start, os.SEEK_SET)
        os.lseek(fd_out, start, os.SEEK_SET)
        remaining = end - start
        while remaining > 0:
            chunk = os.read(fd_in, min(_CHUNK, remaining))
            if not chunk:  # the file shrank while being copied
                return
            remaining -= len(chunk)
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd_out, view):]
        offset = end
