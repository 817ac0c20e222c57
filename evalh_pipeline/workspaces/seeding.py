"""Seed a workspace from a fixture: fast, and never sharing an inode with the fixture.

Hard links would let the system under test change the fixture through the workspace,
so they are never used. GNU ``cp --reflink=auto -a`` clones (copy-on-write) on btrfs,
XFS and friends and copies elsewhere; macOS ``cp -c`` clones on APFS; anything else
(or a failing ``cp``) falls back to Python copies that keep sparse files sparse.
Symlinks are copied as links, never followed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from evalh_pipeline.errors import CellError
from evalh_pipeline.common.trees import remove_tree
from evalh_pipeline.common.copying import copy_tree


class SeedError(CellError, RuntimeError):
    """The fixture could not be copied into the workspace."""


def seed_tree(source: Path, destination: Path) -> str:
    """Copy the contents of ``source`` into the (existing, empty) ``destination``.

    Returns the method used (``cp-reflink-auto``, ``cp-clone`` or ``python-copy``).
    """
    if not source.is_dir():
        raise SeedError(f"fixture folder not found: {source}")
    destination.mkdir(parents=True, exist_ok=True)
    command = _cp_command(source, destination)
    if command is not None:
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode == 0:
            return "cp-clone" if sys.platform == "darwin" else "cp-reflink-auto"
        # A half copy must not mix with the fallback's copy.
        _empty_folder(destination)
    try:
        copy_tree(source, destination, dirs_exist_ok=True)
    except (OSError, shutil.Error) as exc:
        raise SeedError(f"cannot copy fixture {source} into the workspace: {exc}") from exc
    return "python-copy"


def _cp_command(source: Path, destination: Path) -> list[str] | None:
    cp = shutil.which("cp")
    if cp is None:
        return None
    if sys.platform.startswith("linux"):
        # `source/.` copies the contents, dotfiles included; -a keeps links as links and modes.
        return [cp, "--reflink=auto", "-a", "--no-target-directory", f"{source}/.", str(destination)]
    if sys.platform == "darwin":
        return [cp, "-c", "-R", "-p", f"{source}/.", str(destination)]
    return None


def _empty_folder(folder: Path) -> None:
    for child in list(os.scandir(folder)):
        remove_tree(Path(child.path))
