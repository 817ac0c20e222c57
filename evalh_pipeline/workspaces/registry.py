"""WorkspaceAdapter registry: ``workspace.type`` names -> classes."""

from __future__ import annotations

from evalh_pipeline.registry import Registry
from evalh_pipeline.workspaces.base import WorkspaceAdapter

WORKSPACES: Registry[WorkspaceAdapter] = Registry(
    "workspace type",
    "evalh_pipeline.workspaces",
    {
        "git": "evalh_pipeline.workspaces.git:GitWorkspace",
        "tempdir_snapshot": "evalh_pipeline.workspaces.tempdir_snapshot:TempdirSnapshotWorkspace",
    },
)
