"""``git_branch``: the system is a branch of a repository (eval-harness 2.0.2's keys).

When the run starts, ``branch`` of ``repo_path`` is cloned (sharing the repository's
objects; nothing is written into it, so the branch may stay checked out there and the
user's own git is never locked out) into a temporary folder, ``start_command``
is started there (an argv, never a shell; ``{port}`` in it is replaced by a free loopback
port) in its own process group, and once ``healthcheck`` answers 2xx every cell is
delegated to ``inner_adapter`` built from ``inner_config`` with ``{port}`` filled in. At
the end the process group is stopped (SIGTERM, then SIGKILL after 5 s) and the clone
removed. A service that exits or never gets healthy fails every cell of the variant with
its last output lines; the run completes.

- ``repo_path``: relative to the eval's folder (``..`` allowed, as in eval-harness) or absolute.
- Environment: the host's, as in eval-harness, with ``env`` on top (values may use ``{port}``).
- The service's output goes to a log in the temporary folder; its tail is shown in errors.
- A killed run leaves its service and clone: the folder's ``owner.json`` names the run
  (host, pid, start time), the repository and the service's process group, and the next
  start of a git_branch system stops that group and removes that folder once the run is
  gone (never a live run's).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from evalh_pipeline.common.git import GitError, GitNotFound, run_git
from evalh_pipeline.common.processes import (
    argv_list,
    env_mapping,
    kill_group,
    owner_dead,
    owner_marker,
    process_alive,
    process_start,
)
from evalh_pipeline.systems.base import AdapterError
from evalh_pipeline.systems.service import ServiceConfig, ServiceSystem, free_port, render_port

STOP_SECONDS = 5.0
LOG_TAIL_BYTES = 2048
_GIT_SETTINGS = ("advice.detachedHead=false", "core.autocrlf=false")
# A clone sharing the repository's objects takes seconds even for a large one.
GIT_TIMEOUT_SECONDS = 300.0
FOLDER_PREFIX = "evalh-git-branch-"
OWNER_FILE = "owner.json"


class GitBranchConfig(ServiceConfig):
    repo_path: str = Field(min_length=1)
    branch: str = Field(min_length=1)
    start_command: list[str] = Field(min_length=1)
    env: dict[str, str] = Field(default_factory=dict)
    healthcheck_timeout_seconds: float = Field(default=30, gt=0)

    @field_validator("start_command", mode="before")
    @classmethod
    def _argv(cls, value: Any) -> Any:
        return argv_list(value, "[python, -m, http.server, '{port}']")

    @field_validator("env", mode="before")
    @classmethod
    def _env(cls, value: Any) -> Any:
        return env_mapping(value)

    @field_validator("branch")
    @classmethod
    def _branch(cls, value: str) -> str:
        if value.startswith("-"):
            raise ValueError(f"branch must name a branch, got {value!r}")
        return value


def _git(cwd: Path, *args: str, source: Path | None = None) -> str:
    """``git <args>`` in the user's repository (``source``, trusted) or beside it, taking no
    lock there (common/git.py); a failure or a timeout is the variant's error."""
    try:
        return run_git(cwd, *args, timeout=GIT_TIMEOUT_SECONDS, settings=_GIT_SETTINGS,
                       trusted=(cwd,) if source is None else (cwd, source)).text
    except GitNotFound:
        raise AdapterError("git_branch needs the git binary on PATH") from None
    except GitError as exc:
        raise AdapterError(f"git_branch: {exc}") from None


def _write_owner(folder: Path, repo: Path, pgid: int | None) -> None:
    marker = {"owner": owner_marker(), "repo": str(repo), "pgid": pgid,
              "pgid_start": process_start(pgid) if pgid else None}
    (folder / OWNER_FILE).write_text(json.dumps(marker), encoding="utf-8")


def sweep_dead_runs(parent: Path | None = None) -> list[Path]:
    """Stop the services and remove the clones that killed runs left; the folders removed."""
    parent = parent or Path(tempfile.gettempdir())
    removed = []
    for folder in parent.glob(f"{FOLDER_PREFIX}*"):
        if folder.is_symlink() or not folder.is_dir() or folder.stat().st_uid != os.getuid():
            continue  # a shared temporary folder: only our own
        try:
            marker = json.loads((folder / OWNER_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not ours, or a run still starting
        if not isinstance(marker, dict) or not owner_dead(str(marker.get("owner", ""))):
            continue
        pgid = marker.get("pgid")
        # A group id is not reused while any member lives; a live leader started at another
        # time is a new group that only got the number.
        if isinstance(pgid, int) and pgid > 1 and (process_start(pgid) is None
                                                    or process_alive(pgid, marker.get("pgid_start"))):
            kill_group(pgid)
        shutil.rmtree(folder, True)  # the clone lives inside it: nothing to undo in the user's repository
        removed.append(folder)
    return removed


class GitBranchSystem(ServiceSystem[GitBranchConfig]):
    """A branch's service per variant; cells go to the inner adapter (see the module docstring)."""

    _folder: Path | None = None
    _worktree: Path | None = None
    _process: asyncio.subprocess.Process | None = None

    @property
    def repo(self) -> Path:
        path = Path(self.config.repo_path).expanduser()
        return (path if path.is_absolute() else self.context.eval_dir / path).resolve()

    async def _start_service(self) -> int:
        cfg = self.config
        repo = self.repo
        if not repo.is_dir():
            raise AdapterError(f"git_branch: repo_path not found: {repo}")
        try:
            await asyncio.to_thread(_git, repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{cfg.branch}^{{commit}}")
        except AdapterError:
            known = (await asyncio.to_thread(_git, repo, "branch", "--format=%(refname:short)")).split()
            raise AdapterError(f"git_branch: branch {cfg.branch!r} not found in {repo} (known: {', '.join(known)})") from None
        await asyncio.to_thread(sweep_dead_runs)
        self._folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
        self._worktree = self._folder / "wt"
        _write_owner(self._folder, repo, None)  # before the clone: a kill from here on is swept
        # A clone sharing the repository's objects, not a worktree of it: nothing is written
        # into the user's repository (no .git/worktrees entry, no lock), so their own git
        # commands never meet evalh's, and a killed run leaves nothing there.
        try:
            await asyncio.to_thread(_git, self._folder, "clone", "-q", "--shared", "--no-tags", "--single-branch",
                                    "--branch", cfg.branch, str(repo), str(self._worktree), source=repo)
            # The commit the run recorded for this variant, not the branch as it is now: a
            # commit made to it mid-run (or between a stop and --resume) is another run's.
            if self.version.startswith("git:"):
                await asyncio.to_thread(_git, self._worktree, "checkout", "-q", "--detach",
                                        self.version.removeprefix("git:"), source=repo)
            self._ran = "git:" + await asyncio.to_thread(_git, self._worktree, "rev-parse", "HEAD", source=repo)
        except AdapterError:
            await self._stop_service()
            raise
        port = free_port()
        env = {**self.context.host_env, **{k: render_port(v, port) for k, v in cfg.env.items()}}
        argv = render_port(cfg.start_command, port)
        with open(self._folder / "service.log", "wb") as log:
            try:
                self._process = await asyncio.create_subprocess_exec(
                    *argv, cwd=self._worktree, env=env, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True)
            except (OSError, ValueError) as exc:
                await self._stop_service()
                raise AdapterError(f"git_branch: cannot start {argv[0]!r}: {exc}") from None
        _write_owner(self._folder, repo, self._process.pid)
        return port

    async def _exited(self) -> str | None:
        if self._process is None or self._process.returncode is None:
            return None
        return f"start_command exited with code {self._process.returncode}; {await self._last_output()}"

    async def _last_output(self) -> str:
        log = self._folder / "service.log" if self._folder else None
        if log is None or not log.exists():
            return "no output"
        with open(log, "rb") as handle:
            handle.seek(max(0, log.stat().st_size - LOG_TAIL_BYTES))
            tail = handle.read().decode("utf-8", "replace").strip()
        return f"its last output:\n{tail}" if tail else "it wrote nothing"

    async def _stop_service(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.returncode is None:
            # The whole group: what start_command started goes with it.
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                await asyncio.wait_for(process.wait(), STOP_SECONDS)
            except TimeoutError:
                pass
        if process is not None:
            kill_group(process.pid)  # leftovers of the group, or a service that ignored SIGTERM
            await process.wait()
        self._worktree = None  # inside the folder
        if self._folder is not None:
            await asyncio.to_thread(shutil.rmtree, self._folder, True)
            self._folder = None
