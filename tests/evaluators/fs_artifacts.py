"""Hand-made FilesystemArtifacts for evaluator tests: a before tree and an after tree on disk."""

from __future__ import annotations

import hashlib
import os
from datetime import datetime, timezone
from pathlib import Path

from evalh_pipeline.models import (
    FileDiff,
    FileEntry,
    FileManifest,
    FilesystemArtifact,
    Trace,
)

NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def a_trace() -> Trace:
    return Trace(run_id="r", case_id="c1", variant_name="v", started_at=NOW, finished_at=NOW, latency_ms=0)


def _manifest(files: dict[str, bytes], modes: dict[str, int]) -> FileManifest:
    return FileManifest(files={
        path: FileEntry(size=len(data), mode=modes.get(path, 0o100644), mtime=0.0, sha256=hashlib.sha256(data).hexdigest())
        for path, data in files.items()
    })


def make_artifact(folder: Path, before: dict[str, str | bytes], after: dict[str, str | bytes],
                  modes: dict[str, int] | None = None) -> FilesystemArtifact:
    """Lay out ``folder`` as a workspace adapter does and return the matching artifact.

    ``after/`` gets the full after tree, ``before/`` the original versions of modified and
    removed files only; ``modes`` sets file modes in ``after/`` and the after-manifest.
    """
    modes = modes or {}
    old = {p: d.encode() if isinstance(d, str) else d for p, d in before.items()}
    new = {p: d.encode() if isinstance(d, str) else d for p, d in after.items()}
    added = sorted(set(new) - set(old))
    removed = sorted(set(old) - set(new))
    modified = sorted(p for p in set(old) & set(new) if old[p] != new[p])
    for side, files in (("after", new), ("before", {p: old[p] for p in [*modified, *removed]})):
        (folder / side).mkdir(parents=True, exist_ok=True)
        for path, data in files.items():
            target = folder / side / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            if side == "after" and path in modes:
                os.chmod(target, modes[path] & 0o7777)
    return FilesystemArtifact(
        case_id="c1", variant_name="v", workspace_kind="tempdir_snapshot",
        before_manifest=_manifest(old, {}), after_manifest=_manifest(new, modes),
        diff=FileDiff(added=added, removed=removed, modified=modified),
        artifacts_path=str(folder),
    )
