"""The one lock of a run directory: every writer of a run holds it (``<run dir>/.lock``).

Writers are the trace producer (``run``, ``--resume``, ``retry-failed``), the judge
(``re-evaluate``), the summary and drift stages, and the rewrites of traces.jsonl and
results.jsonl. Two of them never interleave on one run directory:

- a command (``evalh run --resume``, ``re-evaluate``, ``retry-failed``) takes the lock
  with :func:`hold_run_directory` for its whole duration and is refused at once, naming
  the holder, when another process has it;
- each stage takes it again with :func:`locked`, waiting for another process to finish
  (a Dagster UI materialization of the same run queues behind a CLI command).

The lock is re-entrant within a process (the stages of the command that holds it pass
through), held with ``flock`` via filelock, so it is released when its holder dies.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import functools
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock, Timeout

_OWNER_SUFFIX = ".owner"
_locks: dict[str, FileLock] = {}
_guard = threading.Lock()
# Locks a forked child's parent held at the fork (see continue_in_forked_child).
_held_by_parent: set[str] = set()


R = TypeVar("R")


class RunDirectoryBusy(RuntimeError):
    """Another process is writing this run directory."""


def _lock_for(path: Path) -> FileLock:
    key = str(path.resolve())
    with _guard:
        lock = _locks.get(key)
        if lock is None:
            # One object per path and not thread-local: the lock is held by the process, so
            # stages in worker threads of the command that holds it re-enter it.
            lock = _locks[key] = FileLock(key, thread_local=False)
        return lock


def held_locks() -> frozenset[str]:
    """The run directory locks this process holds now (to hand to a child it forks)."""
    with _guard:
        return frozenset(key for key, lock in _locks.items() if lock.is_locked)


def continue_in_forked_child(held: frozenset[str]) -> None:
    """Call first thing in a forked child that works for its parent's command, with the
    parent's :func:`held_locks` from just before the fork.

    Those locks are held for the child too (``flock`` belongs to the open file, which the
    child shares), so :func:`locked` passes through them; the parent's lock objects are not
    usable here (filelock resets them in a forked child).
    """
    with _guard:
        _held_by_parent.update(held)
        _locks.clear()


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the run directory lock ``path`` for the block, waiting for another process."""
    if str(path.resolve()) in _held_by_parent:
        yield
        return
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
    """Hold ``run_dir_path``'s lock for a whole command; raise RunDirectoryBusy if it is taken."""
    path = Path(run_dir_path) / ".lock"
    lock = _lock_for(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise RunDirectoryBusy(f"{run_dir_path} is being written by another process ({_owner(path)}); "
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


def under_run_lock(stage: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """An async stage ``stage(spec, run_dir, ...)`` that runs holding ``run_dir``'s lock
    (:func:`locked`: one writer of a run directory at a time, re-entrant in this process)."""

    @functools.wraps(stage)
    async def holding(spec: Any, run_dir: Any, *args: Any, **kwargs: Any) -> R:
        with locked(run_dir.lock):
            return await stage(spec, run_dir, *args, **kwargs)

    return holding
