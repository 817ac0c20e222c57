"""FilesystemArtifact and its parts: what a workspace-backed cell changed on disk."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from evalh_pipeline.models.versioning import SCHEMA_VERSION


class FileEntry(BaseModel):
    """One file in a manifest. ``sha256`` holds the content hash (BLAKE3 when installed)."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    size: int
    """The file's size in bytes (for a symlink: the length of its target)."""
    mode: int
    """The file's type and permission bits, as `stat` gives them."""
    mtime: float
    """When the file was last modified, in seconds since the Unix epoch."""
    sha256: str
    """The content hash; `unreadable` when the file could not be read, `special:<kind>` for a file
    that is neither regular nor a link.
    """


class FileManifest(BaseModel):
    """Every file of a workspace, keyed by its path relative to the workspace root."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    files: dict[str, FileEntry] = Field(default_factory=dict)
    """Every file, keyed by its path relative to the workspace root."""


class FileDiff(BaseModel):
    """Set difference of two manifests by (path, hash), with unified diffs for text files."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    added: list[str] = Field(default_factory=list)
    """Paths present after the cell and not before."""
    removed: list[str] = Field(default_factory=list)
    """Paths present before the cell and not after."""
    modified: list[str] = Field(default_factory=list)
    """Paths whose content or mode changed."""
    text_diffs: dict[str, str] = Field(default_factory=dict)
    """Unified diffs of the changed text files, keyed by path; binary and oversized files have
    none, and a long diff is truncated.
    """


class FilesystemArtifact(BaseModel):
    """The constrained view evaluators get of a workspace; identical for every workspace kind."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    schema_version: str = SCHEMA_VERSION
    """The record format's version (additive within 1.x)."""
    case_id: str
    """The case the cell ran."""
    variant_name: str
    """The variant the cell ran."""
    workspace_kind: str
    """The kind of workspace: `tempdir_snapshot`, `git` or `docker_volume`."""
    before_manifest: FileManifest
    """The workspace's files before the system ran."""
    after_manifest: FileManifest
    """The workspace's files after the system ran."""
    diff: FileDiff
    """What changed between the two."""
    artifacts_path: str
    """Where the cell's artifact folder (`before/`, `after/`, `diff.txt`) is stored, as a path or
    storage URL.
    """
