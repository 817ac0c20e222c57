"""Child processes run in their own process group, shared by the cli adapter and the command evaluator.

Exit is watched apart from the pipes (``Process.wait`` on Python 3.11 waits for both), so a
leftover grandchild holding stdout open cannot stretch a command past its exit, and the
whole group is killed afterwards so nothing it started outlives it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from pathlib import Path
from typing import Any

# After the command exits (and its leftovers are killed), how long to wait for the pipes
# to close: a process that left the group (setsid) may still hold them open.
PIPE_GRACE_SECONDS = 2.0
# How long to wait for a killed command to be reaped.
REAP_SECONDS = 5.0


class GroupProtocol(asyncio.SubprocessProtocol):
    """Signals the command's exit and the closing of both output pipes, separately.

    Subclasses keep the output they need in :meth:`pipe_data_received`.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.exited: asyncio.Future[None] = loop.create_future()
        self.pipes_closed: asyncio.Future[None] = loop.create_future()
        self.pid: int | None = None
        self._open = {1, 2}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.pid = transport.get_pid()  # type: ignore[attr-defined]

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        self._open.discard(fd)
        if not self._open and not self.pipes_closed.done():
            self.pipes_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


def kill_group(pgid: int | None) -> None:
    """SIGKILL a process group (started with ``start_new_session``); gone already is fine."""
    if pgid is None:
        return
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def process_start(pid: int) -> str | None:
    """Start time of ``pid`` in clock ticks since boot (Linux); tells a recycled pid apart."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    fields = raw[raw.rfind(")") + 2:].split()
    return fields[19] if len(fields) > 19 else None


def process_alive(pid: int, start: str | None) -> bool:
    """True while ``pid`` runs and (when ``start`` is known) is still the process that started then."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    if start is None:
        return True
    current = process_start(pid)
    return current is None or current == start


def owner_marker() -> str:
    """``host/pid/start`` of this process: what a run's leftovers carry to be recognised once it died."""
    pid = os.getpid()
    return f"{socket.gethostname()}/{pid}/{process_start(pid) or ''}"


def owner_dead(marker: str) -> bool:
    """True when ``marker`` (:func:`owner_marker`) names a process of this host that is gone.

    Anything else (another host, this process, a live one, a malformed marker) is not ours to touch.
    """
    parts = marker.split("/")
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return False
    pid = int(parts[1])
    return pid != os.getpid() and not process_alive(pid, parts[2] or None)


def describe_exit(code: int | None) -> str:
    """``exit code 3``, ``exit code -9 (killed by SIGKILL)`` or ``no exit code``."""
    if code is None:
        return "no exit code"
    if code < 0:
        try:
            return f"exit code {code} (killed by {signal.Signals(-code).name})"
        except ValueError:
            return f"exit code {code} (killed by signal {-code})"
    return f"exit code {code}"


def argv_list(value: Any, example: str) -> Any:
    """Validate a configured ``command`` before pydantic types it: a list, never a shell string.

    YAML numbers in an argv (``[agent, --n, 3]``) are arguments like any other.
    """
    if isinstance(value, str):
        raise ValueError(f"command must be a list of arguments (argv), not a string: write "
                         f"command: {example}; it is never run through a shell")
    if isinstance(value, list):
        return [_yaml_number_as_text(v) for v in value]
    return value


def env_mapping(value: Any) -> Any:
    """A configured ``env`` before pydantic types it: YAML numbers (``PORT: 8080``) become text."""
    if isinstance(value, dict):
        return {k: _yaml_number_as_text(v) for k, v in value.items()}
    return value


def _yaml_number_as_text(value: Any) -> Any:
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
