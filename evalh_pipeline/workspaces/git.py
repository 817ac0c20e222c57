"""git: the opt-in workspace with commits and a real patch (Filesystem.md, "The git path").

Seeds by ``git clone --depth 1`` of ``source_repo`` (``source_branch`` or its HEAD), or,
with ``init_if_missing``, copies a plain folder and commits it. After the run,
``git add -A`` and a synthetic commit on a temp branch give ``git_after``;
``changes.patch`` is ``git diff --binary git_before git_after``. Manifests and the diff
come from the same walk as tempdir_snapshot, so the artifact has the same shape and
hashes (and also lists files git ignores). Git never reads the user's global or system
config here and never writes it: identity and settings are passed per command with ``-c``.
"""

from __future__ import annotations

import os
import stat
import uuid
from pathlib import Path
from typing import Any

from pydantic import field_validator, model_validator

from evalh_pipeline.common.git import GitError, GitNotFound
from evalh_pipeline.common.git import run_git as git
from evalh_pipeline.common.trees import remove_tree
from evalh_pipeline.config.paths import resolve_input_path
from evalh_pipeline.workspaces.base import (
    PreparedWorkspace,
    WorkspaceAdapter,
    WorkspaceConfigModel,
    WorkspaceContext,
    WorkspaceError,
    fixture_folder_problem,
    relative_config_path,
)
from evalh_pipeline.workspaces.manifest import key_to_path
from evalh_pipeline.workspaces.seeding import SeedError, seed_tree

# Per command, ahead of any repository config: identity, no signing, no hooks, no fsmonitor.
_SETTINGS = (
    "user.name=evalh", "user.email=evalh@localhost", "commit.gpgsign=false", "core.autocrlf=false",
    "core.hooksPath=/dev/null", "init.defaultBranch=main", "advice.detachedHead=false",
    "core.fsmonitor=false", "core.untrackedCache=false", "gc.auto=0", "maintenance.auto=false",
)
# The longest one git command may take (a clone of a big source, `add -A` of a big tree).
# A command that outlives it is killed with everything it started.
GIT_TIMEOUT_SECONDS = 300.0


class GitWorkspaceConfig(WorkspaceConfigModel):
    """``source_repo`` relative to the eval's folder (no ``..``); ``source_branch`` default: its HEAD."""

    type: str = "git"
    source_repo: str
    source_branch: str | None = None
    init_if_missing: bool = False

    @model_validator(mode="before")
    @classmethod
    def _eval_harness_keys(cls, data: Any) -> Any:
        # eval-harness 1.0 evals name the source `copy_from` and make it a repository when it
        # is not one (`init_git`, default true): read them as source_repo / init_if_missing.
        if isinstance(data, dict) and "copy_from" in data and "source_repo" not in data:
            data = dict(data)
            data["source_repo"] = data.pop("copy_from")
            data.setdefault("init_if_missing", data.pop("init_git", True))
        return data

    @field_validator("source_repo")
    @classmethod
    def _relative(cls, value: str) -> str:
        return relative_config_path(value, "source_repo")

    def config_problems(self, eval_dir: Path) -> list[tuple[str, str]]:
        problem = fixture_folder_problem(self.source_repo, eval_dir, "source folder")
        return [("source_repo", problem)] if problem else []


def run_git(cwd: Path, *args: str | bytes, trusted: tuple[Path, ...] = (),
            timeout: float = GIT_TIMEOUT_SECONDS) -> bytes:
    """Run git isolated from the user's config (common/git.py); raises :class:`WorkspaceError`.

    ``cwd`` and ``trusted`` are passed as ``safe.directory``: with the global config out of
    the way, a source repository owned by another user would otherwise be refused.
    """
    try:
        return git(cwd, *args, timeout=timeout, isolated=True, settings=_SETTINGS, trusted=trusted).stdout
    except GitNotFound as exc:
        raise WorkspaceError("git workspaces need the git binary on PATH") from exc
    except GitError as exc:
        raise WorkspaceError(str(exc)) from None


def restore_repository_config(tree: Path, config: bytes) -> None:
    """Make ``tree/.git/config`` what evalh wrote at seed time, whatever the system did to it.

    The repository's own config is the one git file the system can write that git reads
    on every command (fsmonitor, filters, diff drivers, includes, ``core.worktree``...);
    no ``-c`` can unset an include or a filter it names, so evalh's git calls after the cell
    run on evalh's config. ``commondir`` (which would point git at another config) goes too.
    Raises :class:`WorkspaceError` when ``.git`` is no longer a real folder.
    """
    git_dir = tree / ".git"
    try:
        mode = os.lstat(git_dir).st_mode
    except FileNotFoundError:
        raise WorkspaceError("the system removed the workspace's .git folder") from None
    if not stat.S_ISDIR(mode):
        raise WorkspaceError("the system replaced the workspace's .git folder with a file or a link")
    for name in ("config", "commondir"):
        path = git_dir / name
        if os.path.lexists(path):
            remove_tree(path)
    fd = os.open(git_dir / "config", os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(config)


def is_repository_root(path: Path) -> bool:
    """True when ``path`` is the top of a git work tree (not merely inside one)."""
    try:
        top = run_git(path, "rev-parse", "--show-toplevel").decode().strip()
    except WorkspaceError:
        return False
    return Path(top).resolve() == path.resolve()


class GitWorkspace(WorkspaceAdapter[GitWorkspaceConfig]):
    """A shallow clone per cell, committed before and after the run."""

    kind = "git"
    exclude_top = frozenset({".git"})

    def __init__(self, config: dict[str, Any], context: WorkspaceContext) -> None:
        super().__init__(config, context)
        self.source = resolve_input_path(self.config.source_repo, context.eval_dir)
        self._source_is_repo: bool | None = None

    def _seed(self, workspace: PreparedWorkspace) -> None:
        tree = workspace.path
        if self._source_is_repo is None:
            self._source_is_repo = self.source.is_dir() and is_repository_root(self.source)
        if self._source_is_repo:
            branch = ["--branch", self.config.source_branch] if self.config.source_branch else []
            # file:// so --depth is honoured for a local source.
            run_git(tree.parent, "clone", "-q", "--depth", "1", "--no-tags", *branch, self.source.as_uri(), str(tree),
                    trusted=(self.source, tree))
        elif self.config.init_if_missing:
            try:
                seed_tree(self.source, tree)
            except SeedError as exc:
                raise WorkspaceError(str(exc)) from exc
            run_git(tree, "init", "-q")
            run_git(tree, "add", "-A")
            run_git(tree, "commit", "-q", "--allow-empty", "--no-verify", "-m", "evalh: before-state")
        else:
            raise WorkspaceError(f"source_repo {self.source} is not a git repository "
                                 "(set init_if_missing: true to start one from the folder)")
        workspace.metadata["git_before"] = run_git(tree, "rev-parse", "HEAD").decode().strip()
        # The config as evalh made it, put back before evalh's own git calls after the cell.
        workspace.metadata["git_config"] = (tree / ".git" / "config").read_bytes()

    def _after_state(self, workspace: PreparedWorkspace) -> dict[str, Any]:
        tree, before = workspace.path, workspace.metadata["git_before"]
        branch = f"evalh-after-{uuid.uuid4().hex[:12]}"
        # Explicit paths: neither a `.git` file nor `core.worktree` may point git elsewhere.
        where = (f"--git-dir={tree / '.git'}", f"--work-tree={tree}")
        try:
            restore_repository_config(tree, workspace.metadata["git_config"])
            run_git(tree, *where, "checkout", "-q", "-b", branch)
            run_git(tree, *where, "add", "-A")
            run_git(tree, *where, "commit", "-q", "--allow-empty", "--no-verify", "-m", "evalh: after-state")
            after = run_git(tree, *where, "rev-parse", "HEAD").decode().strip()
            workspace.metadata["patch"] = run_git(tree, *where, "diff", "--binary", "--no-ext-diff", "--no-textconv",
                                                  before, after)
        except (WorkspaceError, OSError) as exc:
            # The system may have broken .git: the walk-based diff still stands.
            workspace.metadata["patch"] = b""
            return {"git_before": before, "git_after": None, "git_branch": None, "git_error": str(exc)}
        workspace.metadata["git_after"] = after
        return {"git_before": before, "git_after": after, "git_branch": branch}

    def _extra_files(self, workspace: PreparedWorkspace) -> dict[str, bytes]:
        return {"changes.patch": workspace.metadata.get("patch", b"")}

    def _blob(self, workspace: PreparedWorkspace, key: str) -> bytes | None:
        # Read from the source repository: the workspace's .git is the system's to break.
        if not self._source_is_repo:
            return None
        spec = workspace.metadata["git_before"].encode() + b":" + os.fsencode(key)
        try:
            return run_git(self.source, "cat-file", "blob", spec)
        except WorkspaceError:
            return None

    def _original(self, workspace: PreparedWorkspace, key: str) -> bytes | None:
        blob = self._blob(workspace, key)
        if blob is not None:
            return blob
        path = key_to_path(self.source, key)
        return path.read_bytes() if path.is_file() and not path.is_symlink() else None

    def _original_link(self, workspace: PreparedWorkspace, key: str) -> str | None:
        blob = self._blob(workspace, key)
        if blob is not None:
            return os.fsdecode(blob)
        path = key_to_path(self.source, key)
        return os.readlink(path) if path.is_symlink() else None
