"""The WorkspaceAdapter contract and the collection steps every workspace kind shares.

Life of one cell's workspace::

    prepare(case, variant, sample) -> Workspace       seed + before snapshot
    (the system runs with workspace.path)
    collect_artifacts(workspace) -> FilesystemArtifact after snapshot + diff + artifacts
    cleanup(workspace) -> WorkspaceAccounting          mandatory, also after any crash

Artifacts of a cell (folder ``<storage root>/<case>/<variant>/``)::

    before/         original versions of the modified and removed files only
    after/          the full post-run tree (moved, not copied, when on the same file system)
    diff.txt        unified diffs of the text files, one line per other change
    artifact.json   the FilesystemArtifact
    changes.patch   git workspaces: ``git diff --binary`` of the before and after commits

Subclasses implement :meth:`_seed` and may add after-state steps (:meth:`_after_state`).
"""

from __future__ import annotations

import os
import shutil
import stat
import threading
from collections.abc import Mapping
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, field_validator
from typing_extensions import TypeVar

from evalh_pipeline.errors import CellError
from evalh_pipeline.models import EvalCase, FileEntry, FilesystemArtifact, RunVariant
from evalh_pipeline.store.run_dir import workspaces_dir
from evalh_pipeline.systems.base import Workspace
from evalh_pipeline.workspaces.accounting import WorkspaceAccounting
from evalh_pipeline.workspaces.artifacts import ARTIFACT_FILE, dump_artifact
from evalh_pipeline.workspaces.diffing import DiffLimits, build_file_diff, render_diff_text
from evalh_pipeline.workspaces.manifest import HASH_ALGORITHM, Snapshot, hash_bytes, key_to_path, take_snapshot
from evalh_pipeline.workspaces.ownership import create_container, recover_stale
from evalh_pipeline.common.configured import Configured
from evalh_pipeline.common.trees import remove_tree, tree_bytes
from evalh_pipeline.store.object_storage import FsspecObjectStorage, artifact_key, storage_for
from evalh_pipeline.common.copying import copy_tree
from evalh_pipeline.common.file_kinds import describe_mode, read_regular
from evalh_pipeline.config.paths import resolve_input_path
from evalh_pipeline.common.masking import mask_known, mask_known_bytes

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def relative_config_path(value: str, key: str) -> str:
    """Refuse absolute paths and ``..`` in config paths that must stay inside the eval's folder."""
    if not value or Path(value).is_absolute() or value.startswith("~") or "\\" in value:
        raise ValueError(f"{key} must be a path relative to the eval's folder, got {value!r}")
    if ".." in Path(value).parts:
        raise ValueError(f"{key} must not contain '..', got {value!r}")
    return value


def fixture_folder_problem(value: str, eval_dir: Path, what: str) -> str | None:
    """Why the fixture folder ``value`` (``copy_from``, ``source_repo``) cannot be used, or None.

    It must be a folder inside the folder it resolves against (the eval's, or the working
    directory as eval-harness falls back to): ``..`` is refused in the value, and a symlink
    out of it (to ``/``, a home folder, ``/proc``) is refused the same way, at load, rather
    than walked and copied by every cell.
    """
    path = resolve_input_path(value, eval_dir)
    if not path.is_dir():
        kind = "" if not os.path.lexists(path) else f" ({path} is {_kind_of(path)}, not a folder)"
        return f"{what} not found: {eval_dir / value}{kind}"
    base = eval_dir.resolve() if os.path.lexists(eval_dir / value) else Path.cwd().resolve()
    if not path.is_relative_to(base):
        return (f"{value} is a link to {path}, outside the folder it is named from ({base}): "
                f"the {what} must be a folder inside it")
    return None


def _kind_of(path: Path) -> str:
    try:
        return describe_mode(os.stat(path).st_mode)
    except OSError:
        return "a broken link"


class WorkspaceConfigModel(BaseModel):
    """Keys every workspace type accepts; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")

    type: str
    # Where containers are made; default <runs root>/.workspaces (same file system as the
    # run directory, so after/ is a rename). Absolute paths are allowed here.
    base_path: str | None = None
    # fsspec URL of the artifacts storage (file://, memory://, s3://...); default <run dir>/artifacts.
    object_storage: str | None = None
    max_diff_bytes: int = Field(default=256_000, ge=0)
    max_diff_file_bytes: int = Field(default=2_000_000, ge=0)

    @field_validator("object_storage")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and "://" not in value:
            raise ValueError(f"object_storage must be a URL such as file:///abs/path, memory://name or s3://bucket/prefix, got {value!r}")
        return value

    def config_problems(self, eval_dir: Path) -> list[tuple[str, str]]:
        """(key, message) for config values that validate but name things that do not exist."""
        return []


WorkspaceConfigT = TypeVar("WorkspaceConfigT", bound=WorkspaceConfigModel, default=WorkspaceConfigModel, covariant=True)


@dataclass(frozen=True)
class WorkspaceContext:
    """What a workspace adapter needs to know about the run it serves."""

    eval_dir: Path
    runs_root: str
    run_dir: Path
    run_id: str
    # The eval's secrets: a file the system writes with one in it is stored masked.
    secret_values: frozenset[str] = frozenset()
    # The host environment the eval was loaded with (a container engine's client settings); None: os.environ.
    env: Mapping[str, str] | None = None


@dataclass
class PreparedWorkspace(Workspace):
    """A live workspace plus the runner-side state the system adapter never needs."""

    container: Path = field(default_factory=Path)
    case_id: str = ""
    variant_name: str = ""
    sample: int = 0
    before: Snapshot | None = None
    accounting: WorkspaceAccounting = field(default_factory=WorkspaceAccounting)
    tree_moved: bool = False
    measured: bool = False  # the after snapshot sized the final tree
    attempt: int = 0


class WorkspaceError(CellError, RuntimeError):
    """A workspace could not be prepared or collected (the cell errors as ``workspace_error``)."""


class WorkspaceAdapter(Configured[WorkspaceConfigT], ABC):
    """One configured workspace type for a run; builds, collects and removes cell workspaces."""

    Config: ClassVar[type[WorkspaceConfigModel]]  # set from the generic parameter (common/configured.py)
    kind: ClassVar[str] = "base"
    # Top-level names left out of manifests (git's own folder).
    exclude_top: ClassVar[frozenset[str]] = frozenset()
    # The cell's files live in a container, not in the host folder (docker_volume): only a
    # system that runs in it or is handed it can use them (SystemAdapter.works_outside_sandbox).
    sandboxed: ClassVar[bool] = False

    def __init__(self, config: dict[str, Any], context: WorkspaceContext) -> None:
        self.config = self._validated_config(config)
        self.context = context
        self.base_path = self._base_path()
        self.storage: FsspecObjectStorage = storage_for(self.config.object_storage, context.run_dir / "artifacts",
                                                        context.run_id)
        self.limits = DiffLimits(max_file_bytes=self.config.max_diff_file_bytes, max_diff_bytes=self.config.max_diff_bytes)
        self.totals = WorkspaceAccounting()
        self._totals_lock = threading.Lock()  # cells clean up in worker threads

    def _base_path(self) -> Path:
        if self.config.base_path:
            path = Path(self.config.base_path).expanduser()
            return path if path.is_absolute() else (self.context.eval_dir / path).resolve()
        if "://" in self.context.runs_root:
            import tempfile

            return Path(tempfile.gettempdir()) / "evalh-workspaces"
        return workspaces_dir(self.context.runs_root)

    def recover_stale(self) -> tuple[int, int]:
        """Remove containers left by killed runs under ``base_path`` (only ours)."""
        removed, freed = recover_stale(self.base_path)
        with self._totals_lock:
            self.totals.stale_workspaces_removed += removed
            self.totals.stale_bytes_removed += freed
        return removed, freed

    # -- prepare -----------------------------------------------------------------

    def prepare(self, case: EvalCase, variant: RunVariant, sample: int = 0) -> PreparedWorkspace:
        """A fresh, seeded workspace with its before snapshot taken."""
        container = create_container(self.base_path, f"{case.id}-{variant.name}")
        tree = container / "tree"
        tree.mkdir()
        workspace = PreparedWorkspace(path=tree, container=container, case_id=case.id, variant_name=variant.name,
                                      sample=sample)
        workspace.accounting.workspaces = 1
        try:
            self._seed(workspace)
            workspace.before = take_snapshot(tree, exclude_top=self.exclude_top)
        except BaseException:
            self.cleanup(workspace)
            raise
        workspace.accounting.seeded_bytes = workspace.before.total_bytes
        return workspace

    @abstractmethod
    def _seed(self, workspace: PreparedWorkspace) -> None:
        ...

    def reset(self, workspace: PreparedWorkspace) -> None:
        """Throw away what an attempt changed and seed again (before a retry).

        The next attempt gets a tree at a new path: a timed-out attempt that is still running
        (a python_function thread cannot be stopped) keeps writing where it was, not into
        the retry's tree.
        """
        try:
            discarded = remove_tree(workspace.path)
        except OSError:  # still being written to: whatever is left goes with the container
            discarded = 0
        # The discarded tree is one more tree disposed of: it must balance like the last one.
        workspace.accounting.deleted_bytes += discarded
        workspace.accounting.final_bytes += discarded
        workspace.attempt += 1
        workspace.path = workspace.container / f"tree-{workspace.attempt}"
        workspace.path.mkdir()
        workspace.metadata.clear()
        self._seed(workspace)
        workspace.before = take_snapshot(workspace.path, exclude_top=self.exclude_top)
        workspace.accounting.seeded_bytes += workspace.before.total_bytes

    # -- collect -----------------------------------------------------------------

    def collect_artifacts(self, workspace: PreparedWorkspace, *, system_may_run: bool = False) -> FilesystemArtifact:
        """Snapshot the after-state, diff it, write and publish the artifacts folder.

        ``system_may_run``: the system timed out and could not be stopped (a python_function
        thread). The tree is then first copied to a private folder that nothing else holds,
        and that copy is what is snapshotted and stored, so the artifact always equals its
        manifest; the live tree is removed at cleanup.
        """
        if workspace.before is None:
            raise WorkspaceError("the workspace has no before snapshot (prepare failed)")
        if system_may_run:
            frozen = workspace.container / "frozen"
            _copy_tolerant(workspace.path, frozen)
            workspace.path = frozen
        tree = workspace.path
        before_manifest = workspace.before.manifest
        # A secret the system used as a name (cache_<token>.json) is masked like one in a file.
        _mask_secret_names(tree, self.context.secret_values, self.exclude_top)
        after = take_snapshot(tree, exclude_top=self.exclude_top)
        diff, notes = build_file_diff(
            before_manifest, after.manifest, lambda key: self._original(workspace, key),
            lambda key: _read_regular(key_to_path(tree, key)), self.limits,
        )
        # What the system wrote is stored, hashed, committed and diffed masked, never as written.
        masked = _mask_secrets(tree, [*diff.added, *diff.modified], self.context.secret_values)
        extra = self._after_state(workspace)
        if masked:
            after = take_snapshot(tree, exclude_top=self.exclude_top)
            diff, notes = build_file_diff(
                before_manifest, after.manifest, lambda key: self._original(workspace, key),
                lambda key: _read_regular(key_to_path(tree, key)), self.limits,
            )
        workspace.accounting.final_bytes += after.total_bytes
        workspace.measured = True
        staging = workspace.container / "artifact"
        staging.mkdir()
        written = 0
        for key in (*diff.modified, *diff.removed):
            written += self._write_original(workspace, key, before_manifest.files[key], staging / "before")
        (staging / "before").mkdir(exist_ok=True)
        diff_text = render_diff_text(diff, notes).encode("utf-8", "surrogateescape")
        (staging / "diff.txt").write_bytes(diff_text)
        written += len(diff_text)
        for name, data in self._extra_files(workspace).items():
            (staging / name).write_bytes(data)
            written += len(data)
        workspace.tree_moved = _move_or_copy(tree, staging / "after")
        if not workspace.tree_moved:
            written += after.total_bytes
        key = artifact_key(workspace.case_id, workspace.variant_name, workspace.sample)
        artifact = FilesystemArtifact(
            case_id=workspace.case_id,
            variant_name=workspace.variant_name,
            workspace_kind=self.kind,
            before_manifest=before_manifest,
            after_manifest=after.manifest,
            diff=diff,
            artifacts_path=self.storage.url(key),
            sample=workspace.sample,
            hash_algorithm=HASH_ALGORITHM,
            diff_notes={k: v for k, v in vars(notes).items() if v},
            **extra,
        )
        persisted = f"artifacts/{key}" if self.storage.local and self.config.object_storage is None else artifact.artifacts_path
        document = dump_artifact(artifact, persisted)
        (staging / ARTIFACT_FILE).write_bytes(document)
        written += len(document)
        transfer = self.storage.publish_folder(staging, key, move=True)
        if not transfer.moved:
            # Published by copy: the staged tree (with after/) is deleted at cleanup instead.
            workspace.tree_moved = False
            written = transfer.copied_bytes
        workspace.accounting.moved_bytes = after.total_bytes if workspace.tree_moved else 0
        workspace.accounting.copied_bytes += written
        workspace.accounting.artifacts = 1
        return artifact

    def _after_state(self, workspace: PreparedWorkspace) -> dict[str, Any]:
        """Kind-specific steps before the after snapshot; returns extra artifact fields."""
        return {}

    def _extra_files(self, workspace: PreparedWorkspace) -> dict[str, bytes]:
        """Kind-specific files for the artifacts folder (e.g. ``changes.patch``)."""
        return {}

    @abstractmethod
    def _original(self, workspace: PreparedWorkspace, key: str) -> bytes | None:
        """The before-content of ``key`` (regular files), or None when it cannot be had."""
        ...

    def _original_link(self, workspace: PreparedWorkspace, key: str) -> str | None:
        """The before-target of the symlink ``key``, or None."""
        return None

    def _write_original(self, workspace: PreparedWorkspace, key: str, entry: FileEntry, before_dir: Path) -> int:
        target = key_to_path(before_dir, key)
        if stat.S_ISLNK(entry.mode):
            link = self._original_link(workspace, key)
            if link is None:
                return 0
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(link, target)
            return len(os.fsencode(link))
        if not stat.S_ISREG(entry.mode):
            return 0
        data = self._original(workspace, key)
        if data is None or hash_bytes(data) != entry.sha256:
            return 0  # the source changed since the snapshot: better no file than a wrong one
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        os.chmod(target, (entry.mode & 0o777) | stat.S_IRUSR | stat.S_IWUSR)
        return len(data)

    # -- cleanup -----------------------------------------------------------------

    def cleanup(self, workspace: PreparedWorkspace) -> WorkspaceAccounting:
        """Remove the container whatever state it is in; returns the cell's accounting."""
        accounting = workspace.accounting
        deleted = 0
        try:
            deleted = remove_tree(workspace.container)
        except OSError:
            pass
        accounting.deleted_bytes += deleted
        accounting.leftover_bytes = tree_bytes(workspace.container)
        if not workspace.measured:
            # Collection never measured the tree (it crashed): what was deleted is the measure.
            accounting.final_bytes += deleted
        with self._totals_lock:
            self.totals.add(accounting)
        return accounting


def _mask_secrets(tree: Path, keys: list[str], secret_values: frozenset[str]) -> bool:
    """Rewrite each regular file among ``keys`` that holds a secret, masked; True if any was."""
    if not secret_values:
        return False
    changed = False
    for key in keys:
        path = key_to_path(tree, key)
        data = _read_regular(path)
        masked = None if data is None else mask_known_bytes(data, secret_values)
        if masked is None or masked is data:
            continue
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC | _O_NOFOLLOW)
        with os.fdopen(fd, "wb") as handle:
            handle.write(masked)
        changed = True
    return changed


def _mask_secret_names(tree: Path, secret_values: frozenset[str], exclude_top: frozenset[str]) -> None:
    """Rename every entry under ``tree`` whose name holds a secret to its masked name, and
    point every link whose target holds one at the masked target (never following links).
    Two names that mask alike are told apart by a suffix (``***MASKED*** (2)``)."""
    if not secret_values:
        return
    stack = [os.fspath(tree)]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as listing:
            entries = [(entry.name, entry.is_dir(follow_symlinks=False), entry.is_symlink()) for entry in listing]
        taken = {name for name, _, _ in entries}
        for name, is_dir, is_link in entries:
            if folder == os.fspath(tree) and name in exclude_top:
                continue
            path = os.path.join(folder, name)
            masked = mask_known(name, secret_values)
            if masked != name:
                free, n = masked, 2
                while free in taken:
                    free, n = f"{masked} ({n})", n + 1
                taken.add(free)
                os.rename(path, os.path.join(folder, free))
                path = os.path.join(folder, free)
            if is_dir:
                stack.append(path)
            elif is_link:
                target = os.readlink(path)
                masked_target = mask_known(target, secret_values)
                if masked_target != target:
                    os.unlink(path)
                    os.symlink(masked_target, path)


def _read_regular(path: Path) -> bytes | None:
    """The bytes of a regular file the system left; None for a link, a FIFO, a device (never
    opened: a FIFO the system leaves behind would block the read) or a file gone."""
    try:
        return read_regular(path, follow_symlinks=False)
    except OSError:
        return None


def _copy_tolerant(tree: Path, destination: Path) -> None:
    """Copy a tree that may be changing: files that vanish or cannot be read are left out
    (the snapshot of the copy is what gets recorded)."""
    try:
        copy_tree(tree, destination)
    except shutil.Error:
        pass  # partial: some entries changed under the copy


def _move_or_copy(tree: Path, destination: Path) -> bool:
    """Rename ``tree`` to ``destination`` (True) or copy it when renaming is refused (False)."""
    try:
        os.rename(tree, destination)
        return True
    except OSError:
        copy_tree(tree, destination)
        return False
