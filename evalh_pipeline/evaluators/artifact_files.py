"""Read the files of a FilesystemArtifact's folder, wherever it is stored (through fsspec).

The folder at ``artifacts_path`` (a local path or an fsspec URL) holds ``after/`` (the
full post-run tree) and ``before/`` (the original versions of modified and removed
files). Evaluators read through this class only, never through a live workspace path.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
from pathlib import Path
from typing import Literal

import fsspec
from fsspec.implementations.local import LocalFileSystem

from evalh_pipeline.models import FilesystemArtifact

Side = Literal["before", "after"]


class ArtifactFiles:
    """File access into one artifact folder; blocking fsspec calls run in worker threads."""

    def __init__(self, artifact: FilesystemArtifact) -> None:
        self.artifact = artifact
        self.fs, root = fsspec.core.url_to_fs(artifact.artifacts_path)
        self.root = root.rstrip("/")

    def path_of(self, side: Side, rel: str) -> str:
        """The fsspec path of ``rel`` (workspace-relative) on one side; ``..`` is refused."""
        parts = rel.split("/")
        if rel.startswith("/") or ".." in parts:
            raise ValueError(f"artifact path {rel!r} leaves the workspace")
        return f"{self.root}/{side}/{rel}"

    async def read_bytes(self, side: Side, rel: str) -> bytes | None:
        """The file's bytes, or None when that side does not have it.

        A symlink reads as its target path (as git stores it), never as what it points
        to, so an evaluator cannot be led into files outside the artifact.
        """
        def read() -> bytes | None:
            path = self.path_of(side, rel)
            if isinstance(self.fs, LocalFileSystem):
                if os.path.islink(path):
                    return os.fsencode(os.readlink(path))
                top = os.path.realpath(f"{self.root}/{side}")
                if not os.path.realpath(path).startswith(top + os.sep):
                    return None  # reached through a linked folder: not part of this side
            try:
                data: bytes = self.fs.cat_file(path)  # fsspec is untyped
                return data
            except (FileNotFoundError, IsADirectoryError):
                return None

        return await asyncio.to_thread(read)

    async def version(self, side: Side, rel: str) -> bytes | None:
        """A file's content before or after the run, whichever folder holds it.

        ``before/`` holds only files the run modified or removed: an untouched file's
        before-version is its after-version, and an added file has none.
        """
        diff = self.artifact.diff
        if side == "after":
            return None if rel in diff.removed else await self.read_bytes("after", rel)
        if rel in diff.added:
            return None
        if rel in diff.modified or rel in diff.removed:
            return await self.read_bytes("before", rel)
        return await self.read_bytes("after", rel)

    async def copy_after(self, dest: Path) -> int:
        """Copy the whole ``after/`` tree into the existing folder ``dest``; returns files copied.

        Local artifacts are copied with ``shutil`` (symlinks kept as links, modes kept);
        remote ones are downloaded and their modes restored from the after-manifest, so
        an executable script stays executable either way.
        """
        source = f"{self.root}/after"
        if isinstance(self.fs, LocalFileSystem):
            return await asyncio.to_thread(_copy_local, Path(source), dest)
        return await asyncio.to_thread(self._download, source, dest)

    def _download(self, source: str, dest: Path) -> int:
        if not self.fs.exists(source):
            raise FileNotFoundError(f"artifact has no after/ folder at {self.artifact.artifacts_path}")
        copied = 0
        for remote in self.fs.find(source):
            rel = remote[len(source):].lstrip("/")
            self.path_of("after", rel)  # refuses names that would land outside dest
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            self.fs.get_file(remote, str(target))
            entry = self.artifact.after_manifest.files.get(rel)
            if entry is not None:
                os.chmod(target, stat.S_IMODE(entry.mode) or 0o644)
            copied += 1
        return copied


def _copy_local(source: Path, dest: Path) -> int:
    from evalh_pipeline.common.copying import copy_file

    if not source.is_dir():
        raise FileNotFoundError(f"artifact has no after/ folder at {source.parent}")
    copied = 0

    def count(src: str, dst: str) -> str:
        nonlocal copied
        copied += 1
        return copy_file(src, dst)  # sparse files stay sparse

    # Links stay links: following one could copy files from outside the workspace.
    shutil.copytree(source, dest, symlinks=True, copy_function=count, dirs_exist_ok=True)
    return copied
