"""What an eval's fixtures were: the lineage recorded in run.json and watched by the fixture sensor.

The fingerprint of an eval's fixtures is
- the sha256 of the dataset file;
- the git ``HEAD`` of the repository holding the eval folder (else the dataset's folder);
- with a workspace that copies a tree (``workspace.copy_from``): the ``HEAD`` of that
  tree's git repository when it is in one, else a content hash of the tree.

A changed fingerprint is a new fixture version: the sensor starts a run for it, and every
run records the one it was made from.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalh_pipeline.config.spec import EvalSpec

GIT_TIMEOUT_SECONDS = 5
NO_GIT = "nogit"

# path -> (size, mtime_ns, sha256): the sensor re-fingerprints every tick, and unchanged files
# of a copy_from tree are not read again. One entry per path (its latest version), so a
# long-lived sensor process never keeps stale versions.
_FILE_HASHES: dict[str, tuple[int, int, str]] = {}
# A bound for processes that see many fixture trees: past it, the cache starts over.
_FILE_HASHES_MAX = 100_000


@dataclass(frozen=True)
class FixtureFingerprint:
    """The dataset's content hash, the git commit, and the workspace tree's version."""

    dataset_hash: str
    commit: str  # "" when the eval is not in a git repository (or git is unavailable)
    workspace: str = ""  # "" without copy_from; "git:<HEAD>" or "sha256:<tree hash>"

    @property
    def key(self) -> str:
        """The sensor's cursor and run key suffix: ``<commit or nogit>:<dataset sha256>[:<workspace>]``."""
        base = f"{self.commit or NO_GIT}:{self.dataset_hash}"
        return f"{base}:{self.workspace}" if self.workspace else base

    def as_record(self) -> dict[str, str]:
        """The ``fixtures`` entry of run.json."""
        return asdict(self)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def git_head(folder: Path) -> str:
    """``HEAD`` of the git repository containing ``folder``; "" if none (or no git, or timeout)."""
    if not folder.is_dir():
        return ""
    try:
        proc = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "--verify", "-q", "HEAD"],
            capture_output=True, text=True, timeout=GIT_TIMEOUT_SECONDS, check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    head = proc.stdout.strip()
    return head if proc.returncode == 0 and head else ""


def tree_sha256(root: Path) -> str:
    """A content hash of a folder: relative paths, file contents and symlink targets, in
    sorted order (symlinks are never followed, so the hash never leaves the tree)."""
    digest = hashlib.sha256()
    entries: list[tuple[str, str]] = []
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        base = Path(folder)
        for name in dirs:
            if (base / name).is_symlink():
                entries.append(((base / name).relative_to(root).as_posix(), "link:" + os.readlink(base / name)))
        for name in files:
            path = base / name
            rel = path.relative_to(root).as_posix()
            entries.append((rel, "link:" + os.readlink(path) if path.is_symlink() else _cached_sha256(path)))
    for rel, content in sorted(entries):
        digest.update(f"{rel}\0{content}\n".encode())
    return digest.hexdigest()


def _cached_sha256(path: Path) -> str:
    stat = path.stat()
    cached = _FILE_HASHES.get(str(path))
    if cached is not None and cached[:2] == (stat.st_size, stat.st_mtime_ns):
        return cached[2]
    if len(_FILE_HASHES) >= _FILE_HASHES_MAX:
        _FILE_HASHES.clear()
    digest = file_sha256(path)
    _FILE_HASHES[str(path)] = (stat.st_size, stat.st_mtime_ns, digest)
    return digest


def copy_from_path(spec: EvalSpec) -> Path | None:
    """The fixture folder of the workspace (``copy_from``, or a git workspace's ``source_repo``), if any."""
    workspace = spec.config.workspace
    value = (getattr(workspace, "copy_from", None) or getattr(workspace, "source_repo", None)
             if workspace is not None else None)
    if not value:
        return None
    from evalh_pipeline.config.paths import resolve_input_path  # the config package loads the loader

    return resolve_input_path(str(value), spec.eval_dir)


def workspace_version(tree: Path | None) -> str:
    """``git:<HEAD>`` when ``tree`` is in a git repository, else ``sha256:<tree hash>``; "" without one."""
    if tree is None or not tree.is_dir():
        return ""
    head = git_head(tree)
    return f"git:{head}" if head else f"sha256:{tree_sha256(tree)}"


def fixture_fingerprint(spec: EvalSpec) -> FixtureFingerprint:
    """The current fingerprint of ``spec``'s fixtures (see the module docstring)."""
    commit = git_head(spec.eval_dir) or git_head(spec.dataset_path.parent)
    return FixtureFingerprint(
        dataset_hash=file_sha256(spec.dataset_path),
        commit=commit,
        workspace=workspace_version(copy_from_path(spec)),
    )


def recorded_fixtures(meta: dict[str, Any]) -> dict[str, str]:
    """The fingerprint a run recorded in run.json (empty for runs made before it was recorded)."""
    fixtures = meta.get("fixtures")
    return fixtures if isinstance(fixtures, dict) else {}
