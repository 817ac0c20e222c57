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
through), held with ``flock``, so it is released when its holder dies.

A command may hand its lock over to a process it forked to record its Dagster run after it
returns (:func:`hand_over_to_recorder`): the lock then stays held until that recorder is
done, and a command that finds it held by a recorder waits for it instead of refusing.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from filelock import FileLock, Timeout

try:
    import fcntl
except ImportError:  # Windows: no flock, and no fork either, so no hand-over (see _portable_lease)
    fcntl = None  # type: ignore[assignment]

_OWNER_SUFFIX = ".owner"
_locks: dict[str, FileLock] = {}
_guard = threading.Lock()
# Locks a forked child's parent held at the fork (see continue_in_forked_child).
_held_by_parent: set[str] = set()
# This process's command leases (hold_run_directory): lock path -> the descriptor holding its flock.
_leases: dict[str, int] = {}
# How long a command waits for a recorder holding the lock before it is refused.
RECORDER_WAIT_S = 300.0


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
        return frozenset({key for key, lock in _locks.items() if lock.is_locked} | set(_leases))


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
    key = str(path.resolve())
    if key in _held_by_parent or key in _leases:
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
def hold_run_directory(run_dir_path: Path, command: str,
                       on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold ``run_dir_path``'s lock for a whole command; raise RunDirectoryBusy if it is taken.

    A lock held by a recorder (a finished command's Dagster run being recorded) is waited
    for, up to RECORDER_WAIT_S: that command's work is done, only its record is not.
    ``on_wait(holder)`` is called once when the wait starts."""
    path = Path(run_dir_path) / ".lock"
    key = str(path.resolve())
    if key in _leases:  # the command already holds it
        yield
        return
    if fcntl is None:
        with _portable_lease(path, command):
            yield
        return
    fd = _take(path, key, on_wait)
    with _guard:
        _leases[key] = fd
    _write_owner(path, command)
    try:
        yield
    finally:
        with _guard:
            mine = _leases.pop(key, None)
        if mine is not None:  # not handed over
            Path(str(path) + _OWNER_SUFFIX).unlink(missing_ok=True)
            # Unlock before closing: a child forked during the command (a judging worker) may
            # still have a copy of the descriptor, which would keep the flock held.
            fcntl.flock(mine, fcntl.LOCK_UN)
            os.close(mine)


@contextmanager
def _portable_lease(path: Path, command: str) -> Iterator[None]:
    """The command's lease through filelock, where there is no ``flock``: the stages of the
    command re-enter the same lock object (:func:`locked`). Nothing is ever handed over there."""
    lock = _lock_for(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise _busy(path) from None
    try:
        if lock.lock_counter == 1:
            _write_owner(path, command)
        yield
    finally:
        if lock.lock_counter == 1:
            Path(str(path) + _OWNER_SUFFIX).unlink(missing_ok=True)
        lock.release()


def _busy(path: Path) -> RunDirectoryBusy:
    return RunDirectoryBusy(f"{path.parent} is being written by another process ({_owner(path)}); "
                            "wait for it to finish, then try again")


def _take(path: Path, key: str, on_wait: Callable[[str], None] | None) -> int:
    deadline: float | None = None
    while True:
        fd = os.open(key, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            os.close(fd)
        owner = _owner_record(path)
        if not owner.get("recorder"):
            raise _busy(path)
        if deadline is None:
            deadline = time.monotonic() + RECORDER_WAIT_S
            if on_wait is not None:
                on_wait(_owner(path))
        if time.monotonic() > deadline:
            raise RunDirectoryBusy(f"{path.parent} is still held by a Dagster recorder ({_owner(path)}) after "
                                   f"{RECORDER_WAIT_S:.0f} s: see dagster-record.log in the run directory")
        time.sleep(0.05)


def hand_over_to_recorder(run_dir_path: Path, pid: int, command: str) -> None:
    """Give this command's lock of ``run_dir_path`` to the child ``pid`` it forked while holding it.

    The flock belongs to the open file, which the child shares: closing this process's
    descriptor without unlocking leaves it held until the child exits. Call once the
    command's writes are done; the command's own release then does nothing."""
    path = Path(run_dir_path) / ".lock"
    key = str(path.resolve())
    with _guard:
        fd = _leases.pop(key)
    owner = {"pid": pid, "command": f"recording the Dagster run of {command}", "recorder": True,
             "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    try:
        Path(str(path) + _OWNER_SUFFIX).write_text(json.dumps(owner), encoding="utf-8")
    except OSError:
        pass  # the owner note is for messages only
    os.close(fd)


def _write_owner(path: Path, command: str) -> None:
    owner = {"pid": os.getpid(), "command": command,
             "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    try:
        Path(str(path) + _OWNER_SUFFIX).write_text(json.dumps(owner), encoding="utf-8")
    except OSError:
        pass  # the owner note is for messages only


def _owner_record(path: Path) -> dict[str, Any]:
    try:
        owner = json.loads(Path(str(path) + _OWNER_SUFFIX).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return owner if isinstance(owner, dict) else {}


def _owner(path: Path) -> str:
    owner = _owner_record(path)
    try:
        return f"pid {owner['pid']}: {owner['command']}, since {owner['since']}"
    except KeyError:
        return "pid unknown"


def under_run_lock(stage: Callable[..., Awaitable[R]]) -> Callable[..., Awaitable[R]]:
    """An async stage ``stage(spec, run_dir, ...)`` that runs holding ``run_dir``'s lock
    (:func:`locked`: one writer of a run directory at a time, re-entrant in this process)."""

    @functools.wraps(stage)
    async def holding(spec: Any, run_dir: Any, *args: Any, **kwargs: Any) -> R:
        with locked(run_dir.lock):
            return await stage(spec, run_dir, *args, **kwargs)

    return holding
