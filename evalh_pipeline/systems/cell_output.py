"""What a ``python_function`` target prints during one call, kept for that cell's trace.

Used in the worker process of ``isolation: process`` (systems/python_worker.py), which runs
several calls at once: its ``sys.stdout`` and ``sys.stderr`` are :class:`RoutedStream`
objects for the worker's whole life (the process exists only to serve calls), and each
call's writes go to that call's :class:`CellOutput`, found through a context variable (set
in the call's task; a sync target's thread runs in a copy of that context). Writes with no
call in their context (at import, from threads the target starts itself) and writes
straight to the file descriptors (C code, child processes) go to the worker's stderr, which
the parent shows in whole lines (python_function.py ``_forward_stderr``).

Each stream keeps the first :data:`LIMIT` characters of a cell; past it, the rest is
counted, not kept, and a marker at the end says how much was dropped.
"""

from __future__ import annotations

import contextvars
import io
import threading
from typing import Any, TextIO

# Characters of one stream (stdout, stderr) kept per cell.
LIMIT = 65_536

CURRENT: contextvars.ContextVar[CellOutput | None] = contextvars.ContextVar("evalh_cell_output", default=None)


class CellOutput:
    """One call's stdout and stderr, each bounded to :data:`LIMIT` characters."""

    def __init__(self, limit: int = LIMIT) -> None:
        self._limit = limit
        self._lock = threading.Lock()  # a target may print from several threads of its call
        self._kept: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._size = {"stdout": 0, "stderr": 0}
        self._dropped = {"stdout": 0, "stderr": 0}

    def write(self, stream: str, text: str) -> None:
        with self._lock:
            room = self._limit - self._size[stream]
            if room > 0:
                part = text[:room]
                self._kept[stream].append(part)
                self._size[stream] += len(part)
            self._dropped[stream] += max(0, len(text) - max(room, 0))

    def texts(self) -> dict[str, str]:
        """``stdout`` / ``stderr`` -> what was printed (only streams written to), with the
        truncation marker when some was dropped."""
        found = {}
        with self._lock:
            for stream, parts in self._kept.items():
                text = "".join(parts)
                if self._dropped[stream]:
                    text += (f"\n[evalh: {self._dropped[stream]:,} more characters of {stream} not kept; "
                             f"a cell keeps the first {self._limit:,}]")
                if text:
                    found[stream] = text
        return found


class RoutedStream(io.TextIOBase):
    """``sys.stdout`` / ``sys.stderr`` of the worker: the current call's, else ``fallback``."""

    def __init__(self, name: str, fallback: TextIO) -> None:
        super().__init__()
        self.name_of_stream = name
        self.fallback = fallback

    def write(self, text: str) -> int:
        output = CURRENT.get()
        if output is None:
            return self.fallback.write(text)
        output.write(self.name_of_stream, text)
        return len(text)

    def flush(self) -> None:
        self.fallback.flush()

    def writable(self) -> bool:
        return True

    # A library that asks for the descriptor or the byte stream writes to it directly: the
    # fallback's, uncaptured.
    def fileno(self) -> int:
        return self.fallback.fileno()

    @property
    def buffer(self) -> Any:
        return self.fallback.buffer

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.fallback, "encoding", None) or "utf-8"
