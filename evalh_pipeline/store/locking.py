"""The one lock of a run directory: every writer of a run holds it (``<run dir>/.lock``).

Writers are the trace producer (``run``, ``--resume``, ``retry-failed``), the judge
(``re-evaluate``), the summary and drift stages, and the rewrites of traces.jsonl and
results.jsonl. Two of them never interleave on one run directory:

- a command (``evalh run --resume``, ``re-evaluate``, ``retry-failed``) takes the lock
  with :func:`hold_run_directory` for its whole duration and is refused at once, naming
  the holder, when another process has it;
- each stage takes it again with :func:`locked`, waiting for another process to finish
  (a Dagster UI materialization of the same run queues behind a CLI command).

It is a ``filelock`` lock held by the process (re-entrant: the stages of the command that
holds it, in any of its threads, pass through), released by the operating system when its
holder dies. A note beside it (``.lock.owner``) names the holder for the refusal message.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

from filelock import FileLock, Timeout

from evalh_pipeline.errors import InfrastructureError

if TYPE_CHECKING:
    from evalh_pipeline.store.run_dir import RunDirectory

_OWNER_SUFFIX = ".owner"
# One lock object per lock file in this process: held by the process, not by one thread.
_locks: dict[str, FileLock] = {}
_guard = threading.Lock()

R = TypeVar("R")
S = TypeVar("S")  # the stage's spec
P = ParamSpec("P")


class RunDirectoryBusy(InfrastructureError, RuntimeError):
    """Another process is writing this run directory."""


def _lock_for(path: Path) -> FileLock:
    key = str(path.resolve())
    with _guard:
        lock = _locks.get(key)
        if lock is None:
            # Not thread-local: stages in worker threads of the command that holds it re-enter it.
            lock = _locks[key] = FileLock(key, thread_local=False)
        return lock


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the run directory lock ``path`` for the block, waiting for another process."""
    lock = _lock_for(path)
    with lock:
        outermost = lock.lock_counter == 1
        if outermost:
            _write_owner(path, " ".join(sys.argv[:3]) or "evalh")
        try:
            yield
        finally:
            if outermost:
                Path(str(path) + _OWNER_SUFFIX).unlink(missing_ok=True)


@contextmanager
def hold_run_directory(run_dir_path: Path, command: str) -> Iterator[None]:
    """Hold ``run_dir_path``'s lock for a whole command; raise RunDirectoryBusy if another process has it."""
    path = Path(run_dir_path) / ".lock"
    lock = _lock_for(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise RunDirectoryBusy(f"{path.parent} is being written by another process ({_owner(path)}); "
                               "wait for it to finish, then try again") from None
    try:
        if lock.lock_counter == 1:
            _write_owner(path, command)
        yield
    finally:
        if lock.lock_counter == 1:
            Path(str(path) + _OWNER_SUFFIX).unlink(missing_ok=True)
        lock.release()


def _write_owner(path: Path, command: str) -> None:
    owner = {"pid": os.getpid(), "command": command,
             "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    try:
        Path(str(path) + _OWNER_SUFFIX).write_text(json.dumps(owner), encoding="utf-8")
    except OSError:
        pass  # the owner note is for messages only


def _owner(path: Path) -> str:
    try:
        owner = json.loads(Path(str(path) + _OWNER_SUFFIX).read_text(encoding="utf-8"))
        return f"pid {owner['pid']}: {owner['command']}, since {owner['since']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "pid unknown"


def under_run_lock(stage: Callable[Concatenate[S, RunDirectory, P], Coroutine[Any, Any, R]],
                   ) -> Callable[Concatenate[S, RunDirectory, P], Coroutine[Any, Any, R]]:
    """An async stage ``stage(spec, run_dir, ...)`` that runs holding ``run_dir``'s lock
    (:func:`locked`: one writer of a run directory at a time, re-entrant in this process)."""

    @functools.wraps(stage)
    async def holding(spec: S, run_dir: RunDirectory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with locked(run_dir.lock):
            return await stage(spec, run_dir, *args, **kwargs)

    return holding
