"""tempdir_snapshot: the default workspace, no git needed (Filesystem.md, "The no-git path").

Seeds a fresh folder from ``copy_from`` (copy-on-write where the file system supports
it, real copies otherwise, never hard links), snapshots it before and after the run and
diffs the manifests by path + hash. Original versions come from the fixture, checked
against the before-manifest hash.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import field_validator
from typing_extensions import TypeVar

from evalh_pipeline.config.paths import resolve_input_path
from evalh_pipeline.workspaces.base import (
    PreparedWorkspace,
    WorkspaceAdapter,
    WorkspaceConfigModel,
    WorkspaceError,
    fixture_folder_problem,
    relative_config_path,
)
from evalh_pipeline.workspaces.manifest import key_to_path
from evalh_pipeline.workspaces.seeding import SeedError, seed_tree


class TempdirSnapshotConfig(WorkspaceConfigModel):
    """``copy_from``: the fixture folder, relative to the eval's folder (no ``..``); none: empty."""

    type: str = "tempdir_snapshot"
    copy_from: str | None = None

    @field_validator("copy_from")
    @classmethod
    def _relative(cls, value: str | None) -> str | None:
        return None if value is None else relative_config_path(value, "copy_from")

    def config_problems(self, eval_dir: Path) -> list[tuple[str, str]]:
        problem = fixture_folder_problem(self.copy_from, eval_dir, "fixture folder") if self.copy_from else None
        return [("copy_from", problem)] if problem else []


# docker_volume's workspace is this one with more keys.
TempdirSnapshotConfigT = TypeVar("TempdirSnapshotConfigT", bound=TempdirSnapshotConfig, default=TempdirSnapshotConfig, covariant=True)


class TempdirSnapshotWorkspace(WorkspaceAdapter[TempdirSnapshotConfigT]):
    """Copy, snapshot, diff: the portable workspace."""

    kind = "tempdir_snapshot"

    @property
    def source(self) -> Path | None:
        copy_from = self.config.copy_from
        return resolve_input_path(copy_from, self.context.eval_dir) if copy_from else None

    def _seed(self, workspace: PreparedWorkspace) -> None:
        if self.source is None:
            return
        try:
            workspace.metadata["seed_method"] = seed_tree(self.source, workspace.path)
        except SeedError as exc:
            raise WorkspaceError(str(exc)) from exc

    def _original(self, workspace: PreparedWorkspace, key: str) -> bytes | None:
        if self.source is None:
            return None
        path = key_to_path(self.source, key)
        if path.is_symlink() or not path.is_file():
            return None
        return path.read_bytes()

    def _original_link(self, workspace: PreparedWorkspace, key: str) -> str | None:
        if self.source is None:
            return None
        path = key_to_path(self.source, key)
        return os.readlink(path) if path.is_symlink() else None
