"""FilesystemArtifact and its parts: what a workspace-backed cell changed on disk."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from evalh_pipeline.models.versioning import SCHEMA_VERSION


class FileEntry(BaseModel):
    """One file in a manifest. ``sha256`` holds the content hash (BLAKE3 when installed)."""

    size: int
    mode: int
    mtime: float
    sha256: str


class FileManifest(BaseModel):
    """Every file of a workspace, keyed by its path relative to the workspace root."""

    files: dict[str, FileEntry] = Field(default_factory=dict)


class FileDiff(BaseModel):
    """Set difference of two manifests by (path, hash), with unified diffs for text files."""

    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    modified: list[str] = Field(default_factory=list)
    text_diffs: dict[str, str] = Field(default_factory=dict)


class FilesystemArtifact(BaseModel):
    """The constrained view evaluators get of a workspace; identical for every workspace kind."""

    model_config = ConfigDict(extra="allow")

    schema_version: str = SCHEMA_VERSION
    case_id: str
    variant_name: str
    workspace_kind: str
    before_manifest: FileManifest
    after_manifest: FileManifest
    diff: FileDiff
    artifacts_path: str
