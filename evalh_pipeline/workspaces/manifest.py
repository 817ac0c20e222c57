"""Walk and hash a workspace into a FileManifest, without ever following a symlink.

Keys are paths relative to the root with ``/`` separators. Names that are not valid
UTF-8 keep their bytes through Python's ``surrogateescape`` (``os.fsencode(key)`` gives
them back); artifact.json writes them as ``\\udcXX`` escapes, which round-trip exactly.

A symlink is recorded as a link: ``mode`` carries ``S_IFLNK``, ``size`` the length of
its target and the hash is the hash of the target text. Fifos, sockets and devices are
recorded (hash ``special:<kind>``) but never opened, so a fifo cannot hang the walk.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from evalh_pipeline.common.file_kinds import NotARegularFile, open_regular, special_kind
from evalh_pipeline.models import FileEntry, FileManifest

try:  # the `fast` extra
    import blake3 as _blake3
except ImportError:  # pragma: no cover - exercised only without the extra
    _blake3 = None

HASH_ALGORITHM = "blake3" if _blake3 is not None else "sha256"
_CHUNK = 1 << 20
# Linux file timestamps come from a coarse clock (one jiffy, up to 10 ms): a file changed
# within that window of the snapshot may keep identical stat fields, so it is re-hashed.
_RACY_MARGIN_NS = 50_000_000

StatKey = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode


def new_hasher():  # noqa: ANN201 - hashlib and blake3 objects share no public base class
    """A fresh hasher of :data:`HASH_ALGORITHM`."""
    return _blake3.blake3() if _blake3 is not None else hashlib.sha256()


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
    """A manifest plus what is needed to re-snapshot cheaply (as git's index does).

    ``stats`` holds (size, mtime_ns, ctime_ns, inode) of every regular file; a later
    snapshot re-hashes only files whose stat changed or that are racy.
    """

    manifest: FileManifest
    stats: dict[str, StatKey] = field(default_factory=dict)
    started_ns: int = 0
    total_bytes: int = 0
    hashed_files: int = 0

    def reusable_hash(self, key: str, current: StatKey) -> str | None:
        """The recorded hash of ``key`` if its stat is unchanged and not racy."""
        recorded = self.stats.get(key)
        if recorded is None or recorded != current:
            return None
        if max(current[1], current[2]) >= self.started_ns - _RACY_MARGIN_NS:
            return None
        return self.manifest.files[key].sha256


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
    root: str | os.PathLike[str], previous: Snapshot | None = None, *, exclude_top: frozenset[str] = frozenset(),
    threads: int | None = None,
) -> Snapshot:
    """Walk ``root`` (never following links) and hash every file not unchanged since ``previous``.

    ``exclude_top`` names top-level entries to skip (``.git`` for git workspaces).
    Deep trees are walked with an explicit stack, never recursion.
    """
    started = time.time_ns()
    root_str = os.fspath(root)
    if os.path.islink(root_str) or not os.path.isdir(root_str):
        # The system may swap its whole workspace for a link to elsewhere: never walk that.
        raise ValueError(f"workspace root {root_str} is not a real folder (a symlink, or gone)")
    files: dict[str, FileEntry] = {}
    stats: dict[str, StatKey] = {}
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
                current = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
                stats[key] = current
                total += st.st_size
                digest = previous.reusable_hash(key, current) if previous is not None else None
                files[key] = _entry(st.st_size, mode, st.st_mtime, digest or "")
                if digest is None:
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
    return Snapshot(manifest=manifest, stats=stats, started_ns=started, total_bytes=total, hashed_files=len(to_hash))


def key_to_path(root: Path, key: str) -> Path:
    """The on-disk path of manifest ``key`` under ``root`` (refuses keys escaping it)."""
    parts = key.split("/")
    if key.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"manifest key {key!r} is not a plain relative path")
    return root.joinpath(*parts)
