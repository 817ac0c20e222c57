"""Walk and hash a workspace into a FileManifest, without ever following a symlink.

Keys are paths relative to the root with ``/`` separators. Names that are not valid
UTF-8 keep their bytes through Python's ``surrogateescape`` (``os.fsencode(key)`` gives
them back); artifact.json writes them as ``\\udcXX`` escapes, which round-trip exactly.

A symlink is recorded as a link: ``mode`` carries ``S_IFLNK``, ``size`` the length of
its target and the hash is the hash of the target text. Fifos, sockets and devices are
recorded (hash ``special:<kind>``) but never opened, so a fifo cannot hang the walk.

Every regular file is read and hashed on every walk. A file's stat (size, mtime, ctime,
inode) is never taken as proof that its content is unchanged: on a file system with
one-second timestamps (ext4 with small inodes, ext3, FAT, many NFS servers) a system that
rewrites a file with the same size within the second it was seeded leaves every stat field
as it was, and the after-manifest would then claim the old content.
"""

from __future__ import annotations

import hashlib
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Protocol

from evalh_pipeline.common.file_kinds import NotARegularFile, open_regular, special_kind
from evalh_pipeline.models import FileEntry, FileManifest

_blake3: ModuleType | None
try:  # the `fast` extra
    import blake3

    _blake3 = blake3
except ImportError:  # pragma: no cover - exercised only without the extra
    _blake3 = None

HASH_ALGORITHM = "blake3" if _blake3 is not None else "sha256"
_CHUNK = 1 << 20


class Hasher(Protocol):
    """What hashlib's and blake3's hashers share (they have no common base class)."""

    def update(self, data: bytes, /) -> object: ...

    def hexdigest(self) -> str: ...


def new_hasher() -> Hasher:
    """A fresh hasher of :data:`HASH_ALGORITHM`."""
    hasher: Hasher = _blake3.blake3() if _blake3 is not None else hashlib.sha256()
    return hasher


def hash_bytes(data: bytes) -> str:
    """Hex digest of ``data`` with :data:`HASH_ALGORITHM`."""
    hasher = new_hasher()
    hasher.update(data)
    return hasher.hexdigest()


def hash_file(path: str | os.PathLike[str]) -> str:
    """Hex digest of a regular file's content; refuses to follow a symlink or open a special file."""
    fd = open_regular(path, follow_symlinks=False)
    with os.fdopen(fd, "rb", buffering=0) as handle:
        hasher = new_hasher()
        while chunk := handle.read(_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


@dataclass
class Snapshot:
    """A workspace's manifest, and the bytes and files it covers (for the accounting)."""

    manifest: FileManifest
    total_bytes: int = 0
    hashed_files: int = 0


def _entry(size: int, mode: int, mtime: float, digest: str) -> FileEntry:
    # The values come straight from lstat: skipping validation saves ~30 us per file.
    return FileEntry.model_construct(size=size, mode=mode, mtime=mtime, sha256=digest)


def _hash_or_mark(path: str) -> str:
    try:
        return hash_file(path)
    except PermissionError:
        # The system under test may chmod 000 a file; the walk records it rather than failing.
        return "unreadable"
    except FileNotFoundError:
        return "vanished"
    except NotARegularFile:
        # Swapped for a FIFO or device since the walk saw it: never opened, so not hashed.
        return "unreadable"


def take_snapshot(
    root: str | os.PathLike[str], *, exclude_top: frozenset[str] = frozenset(), threads: int | None = None,
) -> Snapshot:
    """Walk ``root`` (never following links) and hash every regular file.

    ``exclude_top`` names top-level entries to skip (``.git`` for git workspaces).
    Deep trees are walked with an explicit stack, never recursion.
    """
    root_str = os.fspath(root)
    if os.path.islink(root_str) or not os.path.isdir(root_str):
        # The system may swap its whole workspace for a link to elsewhere: never walk that.
        raise ValueError(f"workspace root {root_str} is not a real folder (a symlink, or gone)")
    files: dict[str, FileEntry] = {}
    to_hash: list[tuple[str, str]] = []
    total = 0
    stack: list[tuple[str, str]] = [(root_str, "")]
    while stack:
        folder, prefix = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                key = prefix + entry.name
                if not prefix and entry.name in exclude_top:
                    continue
                st = entry.stat(follow_symlinks=False)
                mode = st.st_mode
                if stat.S_ISDIR(mode):
                    stack.append((entry.path, key + "/"))
                    continue
                if stat.S_ISLNK(mode):
                    target = os.fsencode(os.readlink(entry.path))
                    files[key] = _entry(len(target), mode, st.st_mtime, hash_bytes(target))
                    total += len(target)
                    continue
                if not stat.S_ISREG(mode):
                    files[key] = _entry(0, mode, st.st_mtime, f"special:{special_kind(mode)}")
                    continue
                total += st.st_size
                files[key] = _entry(st.st_size, mode, st.st_mtime, "")
                to_hash.append((key, entry.path))
    if to_hash:
        # File reads and both hashes release the GIL: threads overlap I/O and hashing.
        workers = threads or min(8, 2 * (os.cpu_count() or 1))
        if len(to_hash) < 16 or workers == 1:
            digests = [_hash_or_mark(path) for _, path in to_hash]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                digests = list(pool.map(_hash_or_mark, [path for _, path in to_hash], chunksize=64))
        for (key, _), digest in zip(to_hash, digests):
            files[key].sha256 = digest
    manifest = FileManifest(files=dict(sorted(files.items())))
    return Snapshot(manifest=manifest, total_bytes=total, hashed_files=len(to_hash))


def key_to_path(root: Path, key: str) -> Path:
    """The on-disk path of manifest ``key`` under ``root`` (refuses keys escaping it)."""
    parts = key.split("/")
    if key.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"manifest key {key!r} is not a plain relative path")
    return root.joinpath(*parts)
