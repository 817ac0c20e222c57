"""Running git, in the user's repositories as in evalh's own workspaces.

evalh reads repositories it does not own (the fixtures the sensor watches, a workspace's
``copy_from`` or ``source_repo``, a ``git_branch`` system's repository) while the user works
in them: a ``git status`` that refreshed the index would hold ``.git/index.lock`` and make
the user's own ``git add`` or ``git commit`` fail. So every call here

- takes no optional lock and writes nothing back (``--no-optional-locks``,
  ``GIT_OPTIONAL_LOCKS=0``: no index refresh, no untracked cache);
- runs no program the repository's config names for speed or housekeeping
  (``core.fsmonitor``, hooks, automatic gc or maintenance);
- ignores the variables of an outer git (a hook, a test run) that would point it elsewhere;
- runs in its own process group, killed whole when it outlives its timeout, which is then
  a :class:`GitError` with one line saying which command, where, and for how long.

``isolated=True`` also leaves out the user's global and system config (evalh's own
workspaces, where settings are passed per command); without it, the user's config applies
as it does to their own git (their excludes decide what is untracked).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from evalh_pipeline.errors import InfrastructureError
from evalh_pipeline.common.processes import REAP_SECONDS, kill_group

# Ahead of any repository config: nothing git would start or rewrite on its own account.
_QUIET_SETTINGS = ("core.fsmonitor=false", "core.hooksPath=/dev/null", "gc.auto=0", "maintenance.auto=false")
# Variables of an outer git (a hook, a test run) or of the user's shell that would redirect ours.
_OUTER_GIT_VARIABLES = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT",
    "GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_EDITOR", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS",
)


class GitError(InfrastructureError, RuntimeError):
    """A git command failed, timed out, or git is not installed (one line)."""


class GitNotFound(GitError):
    """There is no git binary on PATH."""


@dataclass(frozen=True)
class GitResult:
    """What a git command printed, and how it exited."""

    returncode: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        """stdout as text, stripped."""
        return os.fsdecode(self.stdout).strip()


def run_git(cwd: Path, *args: str | bytes, timeout: float, check: bool = True, isolated: bool = False,
            settings: Iterable[str] = (), trusted: Iterable[Path] = ()) -> GitResult:
    """Run ``git <args>`` in ``cwd`` without taking a lock there (see the module docstring).

    ``settings`` are passed with ``-c`` after the built-in ones; ``trusted`` folders (and
    ``cwd`` when ``isolated``) as ``safe.directory``. Raises :class:`GitError` when the
    command outlives ``timeout`` (its group killed), when ``check`` and it exits non-zero
    (with its stderr), and :class:`GitNotFound` when git is missing.
    """
    command: list[str | bytes] = ["git", "--no-optional-locks"]
    folders = [cwd, *trusted] if isolated else list(trusted)
    for setting in (*_QUIET_SETTINGS, *settings, *(f"safe.directory={Path(f).resolve()}" for f in folders)):
        command += ["-c", setting]
    command += list(args)
    env = {**os.environ, "GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0"}
    if isolated:
        env |= {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_ATTR_NOSYSTEM": "1"}
        for name in [n for n in env if n.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))]:
            env.pop(name)
    for name in _OUTER_GIT_VARIABLES:
        env.pop(name, None)
    shown = " ".join(a if isinstance(a, str) else os.fsdecode(a) for a in args)
    try:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, start_new_session=True)
    except FileNotFoundError as exc:
        if not Path(cwd).is_dir():
            raise GitError(f"git {shown}: {cwd} is not a folder") from None
        raise GitNotFound("git is not installed (no git binary on PATH)") from exc
    with process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            try:
                process.communicate(timeout=REAP_SECONDS)
            except subprocess.TimeoutExpired:
                pass  # something that left the group holds the pipes: closed on exit
            raise GitError(f"git {shown} in {cwd} did not finish within {timeout:g} s and was killed") from None
    result = GitResult(process.returncode, stdout, " ".join(stderr.decode(errors="replace").split()))
    if check and result.returncode != 0:
        raise GitError(f"git {shown} failed: {result.stderr or f'exit code {result.returncode}'}")
    return result
