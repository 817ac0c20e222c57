"""Remove a tree whatever the system under test did to it, counting the bytes removed.

Read-only files and folders (even mode 000) are handled by making each folder
writable and listable before emptying it; symlinks are removed, never followed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def tree_bytes(root: Path) -> int:
    """Bytes under ``root`` (lstat sizes; links count their own size, not their target's)."""
    if not os.path.lexists(root):
        return 0
    st = os.lstat(root)
    if not stat.S_ISDIR(st.st_mode):
        return st.st_size
    total = 0
    stack = [os.fspath(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                entry_stat = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(entry_stat.st_mode):
                stack.append(entry.path)
            else:
                total += entry_stat.st_size
    return total


def remove_tree(root: Path) -> int:
    """Delete ``root`` and everything under it; returns the bytes of the files deleted."""
    path = os.fspath(root)
    if not os.path.lexists(path):
        return 0
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return st.st_size
    total = 0
    folders: list[str] = []
    stack = [path]
    while stack:
        folder = stack.pop()
        # The folder itself may be read-only or unlistable: we own it, so open it up.
        os.chmod(folder, stat.S_IRWXU)
        folders.append(folder)
        with os.scandir(folder) as entries:
            for entry in entries:
                entry_stat = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(entry_stat.st_mode):
                    stack.append(entry.path)
                else:
                    os.unlink(entry.path)
                    total += entry_stat.st_size
    for folder in reversed(folders):
        os.rmdir(folder)
    return total
