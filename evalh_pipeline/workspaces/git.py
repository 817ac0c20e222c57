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
import subprocess
import uuid
from pathlib import Path
from typing import Any

from pydantic import field_validator, model_validator

from evalh_pipeline.config.paths import resolve_input_path
from evalh_pipeline.workspaces.base import (
    PreparedWorkspace,
    WorkspaceAdapter,
    WorkspaceConfigModel,
    WorkspaceError,
    relative_config_path,
)
from evalh_pipeline.workspaces.manifest import key_to_path
from evalh_pipeline.workspaces.seeding import SeedError, seed_tree

_SETTINGS = (
    "user.name=evalh", "user.email=evalh@localhost", "commit.gpgsign=false", "core.autocrlf=false",
    "core.hooksPath=/dev/null", "init.defaultBranch=main", "advice.detachedHead=false",
)


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


def run_git(cwd: Path, *args: str | bytes, trusted: tuple[Path, ...] = ()) -> bytes:
    """Run git isolated from the user's config; raises :class:`WorkspaceError` with its stderr.

    ``cwd`` and ``trusted`` are passed as ``safe.directory``: with the global config out of
    the way, a source repository owned by another user would otherwise be refused.
    """
    command: list[str | bytes] = ["git"]
    for setting in _SETTINGS:
        command += ["-c", setting]
    for folder in (cwd, *trusted):
        command += ["-c", f"safe.directory={Path(folder).resolve()}"]
    command += list(args)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(name, None)  # an outer git (a hook, a test run) must not redirect ours
    try:
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, check=False)
    except FileNotFoundError as exc:
        raise WorkspaceError("git workspaces need the git binary on PATH") from exc
    if done.returncode != 0:
        shown = " ".join(a if isinstance(a, str) else os.fsdecode(a) for a in args)
        raise WorkspaceError(f"git {shown} failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout


def is_repository_root(path: Path) -> bool:
    """True when ``path`` is the top of a git work tree (not merely inside one)."""
    try:
        top = run_git(path, "rev-parse", "--show-toplevel").decode().strip()
    except WorkspaceError:
        return False
    return Path(top).resolve() == path.resolve()


class GitWorkspace(WorkspaceAdapter):
    """A shallow clone per cell, committed before and after the run."""

    Config = GitWorkspaceConfig
    kind = "git"
    exclude_top = frozenset({".git"})

    def __init__(self, config: dict[str, Any], context) -> None:  # noqa: ANN001 - WorkspaceContext
        super().__init__(config, context)
        self.source = resolve_input_path(self.config.source_repo, context.eval_dir)
        self._source_is_repo: bool | None = None

    @classmethod
    def config_problems(cls, config: GitWorkspaceConfig, eval_dir: Path) -> list[tuple[str, str]]:
        if not resolve_input_path(config.source_repo, eval_dir).is_dir():
            return [("source_repo", f"source folder not found: {eval_dir / config.source_repo}")]
        return []

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

    def _after_state(self, workspace: PreparedWorkspace) -> dict[str, Any]:
        tree, before = workspace.path, workspace.metadata["git_before"]
        branch = f"evalh-after-{uuid.uuid4().hex[:12]}"
        try:
            run_git(tree, "checkout", "-q", "-b", branch)
            run_git(tree, "add", "-A")
            run_git(tree, "commit", "-q", "--allow-empty", "--no-verify", "-m", "evalh: after-state")
            after = run_git(tree, "rev-parse", "HEAD").decode().strip()
            workspace.metadata["patch"] = run_git(tree, "diff", "--binary", before, after)
        except WorkspaceError as exc:
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
