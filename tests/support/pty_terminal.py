"""Run a command the way a person does: on a real pseudo-terminal.

The child gets a pty as stdin, stdout and stderr and as its controlling terminal (so
isatty() is true and Ctrl-C is the terminal's ^C, delivered as SIGINT to its foreground
process group), with a window size and TERM set like an ordinary terminal emulator.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time
from dataclasses import dataclass
from pathlib import Path

HIDE_CURSOR = b"\x1b[?25l"
SHOW_CURSOR = b"\x1b[?25h"
_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)")


@dataclass
class TerminalSession:
    """What the terminal received and how the command ended."""

    returncode: int
    raw: bytes

    @property
    def text(self) -> str:
        """The output with ANSI sequences removed and CR/LF made LF (what the eye reads)."""
        plain = _ANSI.sub(b"", self.raw).replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        return plain.decode("utf-8", errors="replace")

    @property
    def cursor_left_visible(self) -> bool:
        """True unless the cursor was hidden and never shown again afterwards."""
        hidden = self.raw.rfind(HIDE_CURSOR)
        return hidden == -1 or self.raw.find(SHOW_CURSOR, hidden) != -1


def _controlling_terminal() -> None:
    # Runs in the child after setsid (start_new_session): fd 0 is the pty's slave end.
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    # A shell runs a foreground command with Ctrl-C's default action, whatever it inherited
    # (a test run started in the background of a script ignores SIGINT).
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_on_terminal(argv: list[str], *, env: dict[str, str], cwd: Path | str, timeout: float = 180,
                    interrupt_when: bytes | None = None, columns: int = 120, rows: int = 40,
                    replies: list[tuple[bytes, bytes]] = ()) -> TerminalSession:
    """Run ``argv`` on a new pty and collect everything it draws until it exits.

    ``interrupt_when``: once this byte string has appeared on the terminal, type Ctrl-C.
    ``replies``: (prompt, keys) in order: once the prompt has appeared (after where the
    previous one did), type the keys, as a person answering it does.
    """
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    env = {**env, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows)}
    for name in ("NO_COLOR", "FORCE_COLOR", "CI", "TTY_COMPATIBLE"):
        env.pop(name, None)
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd, env=env,
                            start_new_session=True, preexec_fn=_controlling_terminal, close_fds=True)
    os.close(slave)
    chunks: list[bytes] = []
    interrupted = False
    pending = list(replies)
    seen_up_to = 0  # where in the visible text the last answered prompt ended
    deadline = time.monotonic() + timeout
    try:
        while True:
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                raise TimeoutError(f"{argv} still running after {timeout} s; output so far:\n"
                                   + b"".join(chunks).decode("utf-8", "replace")[-3000:])
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError as exc:  # EIO: every holder of the slave end has closed it
                    if exc.errno != errno.EIO:
                        raise
                    data = b""
                if not data:
                    break
                chunks.append(data)
                # Match what the eye sees: styles may sit between the characters (`0\x1b[0m/200`).
                if interrupt_when is not None and not interrupted and interrupt_when in _ANSI.sub(b"", b"".join(chunks)):
                    os.write(master, b"\x03")  # the terminal turns ^C into SIGINT for the foreground group
                    interrupted = True
                while pending:
                    visible = _ANSI.sub(b"", b"".join(chunks))
                    found = visible.find(pending[0][0], seen_up_to)
                    if found == -1:
                        break
                    seen_up_to = found + len(pending[0][0])
                    os.write(master, pending.pop(0)[1])
            elif proc.poll() is not None and not select.select([master], [], [], 0.2)[0]:
                break
        returncode = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(master)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return TerminalSession(returncode=returncode, raw=b"".join(chunks))
