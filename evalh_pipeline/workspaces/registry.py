"""WorkspaceAdapter registry: ``workspace.type`` names -> classes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalh_pipeline.registry import Registry

if TYPE_CHECKING:  # the classes load on first use: loading an eval imports only the names
    from evalh_pipeline.workspaces.base import WorkspaceAdapter

WORKSPACES: Registry[WorkspaceAdapter] = Registry(
    "workspace type",
    "evalh_pipeline.workspaces",
    {
        "docker_volume": "evalh_pipeline.workspaces.docker_volume:DockerVolumeWorkspace",
        "git": "evalh_pipeline.workspaces.git:GitWorkspace",
        "tempdir_snapshot": "evalh_pipeline.workspaces.tempdir_snapshot:TempdirSnapshotWorkspace",
    },
)
