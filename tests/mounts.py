"""Real file systems mounted for a test: a small tmpfs (to fill, or to make read-only) and an
ext4 image with one-second timestamps. Root only (CI runs as root); elsewhere the test is
skipped with the reason. Always unmounted, even when the test fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _mount(args: list[str]) -> None:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("SKIPPED LOUDLY: this test mounts a real file system and needs root (CI runs as root)")
    done = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        pytest.skip(f"SKIPPED LOUDLY: mount is not permitted here ({done.stderr.strip()}); CI runs it as root")


def _unmount(folder: Path) -> None:
    subprocess.run(["umount", "--lazy", str(folder)], capture_output=True, timeout=60, check=False)


@contextmanager
def tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``2m``) mounted on ``folder`` (created) for the block."""
    folder.mkdir(parents=True, exist_ok=True)
    _mount(["-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder)])
    try:
        yield folder
    finally:
        _unmount(folder)


def remount_read_only(folder: Path) -> None:
    """Make the file system mounted on ``folder`` read-only (root's writes fail too)."""
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True, capture_output=True, timeout=60)


def fill(folder: Path) -> Path:
    """Write into ``folder`` until its file system is full; the file that holds the space."""
    ballast = folder / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for size in (1 << 20, 1 << 12, 1):  # big blocks, then the last pages, then the last bytes
            try:
                while os.write(fd, b"\0" * size):
                    pass
            except OSError:
                pass  # ENOSPC at this block size
    finally:
        os.close(fd)
    return ballast


@contextmanager
def one_second_clock_fs(folder: Path, image: Path) -> Iterator[Path]:
    """An ext4 file system with 128-byte inodes, whose timestamps have one-second resolution
    (as ext3, FAT and many NFS servers do), loop-mounted on ``folder`` for the block."""
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("SKIPPED LOUDLY: mkfs.ext4 is not installed (e2fsprogs)")
    with image.open("wb") as handle:
        handle.truncate(32 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-I", "128", str(image)], check=True, capture_output=True, timeout=60)
    folder.mkdir(parents=True, exist_ok=True)
    _mount(["-o", "loop", str(image), str(folder)])
    try:
        yield folder
    finally:
        _unmount(folder)
