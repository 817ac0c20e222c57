"""What `evalh` prints, on a terminal and in a CI log.

Every message is plain text: nothing in it is read as rich markup (`[red]`), emoji codes
(`:100:` in `cases.jsonl:100:`) or highlighting, because messages quote user files, and
output of the system under test. On a terminal, styles come from `Text` spans, never from
the message itself; off a terminal, lines go out as they are, never wrapped or truncated,
with no ANSI codes.

Text that comes from outside the tool (answers, thinking, tool names, stderr, diffs, case
ids) is untrusted: `escape_control` shows control characters as escapes so that a system
cannot retitle, clear or recolour the user's terminal, or plant a hyperlink in it.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Self, TextIO

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress as RichProgress

# C0 controls except tab and newline, DEL, and the C1 range (0x9b is a one-byte CSI).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Characters that reorder or hide text on a terminal (bidi overrides, zero-width marks).
_INVISIBLE = re.compile(r"[\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_control(text: Any) -> str:
    """``text`` with every terminal control character shown as a ``\\xNN`` escape."""
    text = str(text)
    return _INVISIBLE.sub(_visible, _CONTROL.sub(_visible, text))


class Stream:
    """stdout or stderr: a rich Console on a terminal (made on first use), plain lines otherwise.

    Whether the stream is a terminal is decided once, on first use, and on a terminal the
    stream writes to a duplicate of its file descriptor: while a Dagster step runs, Dagster
    points descriptors 1 and 2 at a pipe into its compute logs, and writing through the
    original descriptor would then stop the bars (rich sees no terminal) or reach the
    terminal late.
    """

    def __init__(self, *, stderr: bool = False) -> None:
        self._stderr = stderr
        self._terminal: TextIO | None = None
        self._decided = False
        self._console: Console | None = None

    def _decide(self) -> None:
        if self._decided:
            return
        self._decided = True
        stream = sys.stderr if self._stderr else sys.stdout
        try:
            if stream.isatty():
                stream.flush()
                self._terminal = os.fdopen(os.dup(stream.fileno()), "w", encoding=stream.encoding or "utf-8",
                                           errors="replace", closefd=True)
        except (AttributeError, ValueError, OSError):  # closed, replaced or fd-less stream
            self._terminal = None

    @property
    def file(self) -> TextIO:
        self._decide()
        if self._terminal is not None:
            return self._terminal
        return sys.stderr if self._stderr else sys.stdout

    @property
    def is_terminal(self) -> bool:
        self._decide()
        return self._terminal is not None

    @property
    def console(self) -> Console:
        """The rich Console for this stream (imported lazily: the read-only commands skip rich)."""
        if self._console is None:
            from rich.console import Console

            # markup/emoji/highlight off: text is shown as written; styles come from Text spans.
            self._console = Console(file=self.file, markup=False, emoji=False, highlight=False,
                                    force_terminal=self.is_terminal or None)
        return self._console

    def line(self, text: str = "", *, style: str | None = None, prefix: str = "", prefix_style: str | None = None) -> None:
        """Print one message (already escaped where it quotes untrusted text)."""
        if not self.is_terminal:
            self.file.write(prefix + text + "\n")
            self.file.flush()
            return
        from rich.text import Text

        rendered = Text()
        if prefix:
            rendered.append(prefix, style=prefix_style)
        rendered.append(text, style=style)
        # soft_wrap: the terminal wraps a long line itself, so a path in it copies whole.
        self.console.print(rendered, soft_wrap=True)

    def rich(self, renderable: Any) -> None:
        """Print a rich renderable (a Text or a Table) on a terminal."""
        self.console.print(renderable)
        self.file.flush()


out = Stream()
err = Stream(stderr=True)


def error(message: str) -> None:
    """``error: <message>`` on stderr; ``message`` is escaped (it may quote any input)."""
    err.line(escape_control(message), prefix="error: ", prefix_style="bold red")


def warning(message: str) -> None:
    """``warning: <message>`` on stderr."""
    err.line(escape_control(message), prefix="warning: ", prefix_style="yellow")


def say(message: str, *, style: str | None = None) -> None:
    """A line of the command's output on stdout."""
    out.line(escape_control(message), style=style)


def table(headers: list[str], rows: list[list[str]], *, title: str | None = None) -> None:
    """A table on stdout: rich box drawing on a terminal, a plain aligned layout in a log.

    Cells are escaped. Nothing is truncated in either form: on a terminal a too-long name
    folds onto a second line instead of ending in an ellipsis.
    """
    rows = [[escape_control(cell) for cell in row] for row in rows]
    # The narrowest box table: names whole, every other column as wide as its longest header
    # word or figure, plus borders. Wider than the terminal, a box table would cut something,
    # so the plain layout is used and the terminal wraps it.
    widths = [max([len(row[0]) for row in rows] + [len(headers[0])])] + [
        max([len(word) for word in header.split()] + [len(row[i]) for row in rows])
        for i, header in enumerate(headers) if i > 0]
    boxed = out.is_terminal and sum(widths) + 3 * len(widths) + 1 <= out.console.width
    if not boxed:
        from evalh_pipeline.queries.report import text_table

        lines = ([title, ""] if title else []) + text_table(headers, rows)
        out.file.write("\n".join(lines) + "\n")
        out.file.flush()
        return
    from rich.table import Table

    rendered = Table(title=title)
    for i, header in enumerate(headers):
        # Names (variants, evaluators) stay whole on one line; headers and figures give way.
        if i == 0:
            rendered.add_column(header, no_wrap=True)
        else:
            rendered.add_column(header, justify="right", overflow="fold")
    for row in rows:
        rendered.add_row(*row)
    out.rich(rendered)


class LineProgress:
    """The runner's Progress protocol as one line per phase start and end (CI logs)."""

    def __init__(self, stream: Stream = err) -> None:
        self._stream = stream
        self._started: dict[str, float] = {}
        self._done: dict[str, int] = {}

    def start(self, phase: str, total: int | None) -> None:
        self._started[phase] = time.monotonic()
        self._done[phase] = 0
        self._stream.line(f"{phase}: started" + (f" ({total} to do)" if total is not None else ""))

    def advance(self, phase: str, n: int = 1) -> None:
        self._done[phase] = self._done.get(phase, 0) + n

    def finish(self, phase: str) -> None:
        elapsed = time.monotonic() - self._started.get(phase, time.monotonic())
        self._stream.line(f"{phase}: done, {self._done.get(phase, 0)} in {elapsed:.1f} s")


class BarProgress:
    """The runner's Progress protocol drawn as rich progress bars (one per phase).

    The bars start drawing with the first phase, not before: a command that fails before
    any work draws nothing.
    """

    def __init__(self, bars: RichProgress) -> None:
        self.bars = bars
        self.tasks: dict[str, Any] = {}

    def start(self, phase: str, total: int | None) -> None:
        self.bars.start()  # no-op once drawing
        self.tasks[phase] = self.bars.add_task(phase, total=total)

    def advance(self, phase: str, n: int = 1) -> None:
        self.bars.advance(self.tasks[phase], n)

    def finish(self, phase: str) -> None:
        task = self.tasks[phase]
        self.bars.update(task, total=self.bars.tasks[task].completed)


def progress_bars() -> RichProgress:
    """Bars on stderr's terminal; the caller uses them as a context manager, which restores the
    cursor whether the block ends normally, with an error or with Ctrl-C. Entering it draws
    nothing yet: :class:`BarProgress` starts the display with the first phase."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress as RichProgress, TextColumn, TimeElapsedColumn

    class _LazyBars(RichProgress):
        _drawing: set[threading.Thread] = set()

        def __enter__(self) -> Self:
            return self  # stop() on exit is a no-op if nothing was drawn

        def start(self) -> None:
            before = set(threading.enumerate())
            super().start()
            self._drawing = self._drawing | (set(threading.enumerate()) - before)

        def stop(self) -> None:
            # rich signals its refresh thread to end but does not wait for it: wait, so the
            # last refresh is drawn before whatever the command prints next.
            super().stop()
            for thread in self._drawing:
                thread.join()
            self._drawing = set()

    return _LazyBars(
        TextColumn("{task.description:>8}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err.console, transient=False,
    )


def plural(count: int, word: str) -> str:
    """``1 sample``, ``2 samples``."""
    return f"{count} {word if count == 1 else word + 's'}"


def percentage_points(delta: float) -> str:
    """A pass-rate delta (a fraction) in percentage points: ``-42.9 pp``."""
    return f"{round(delta * 100, 1) + 0.0:+.1f} pp"  # as queries/report.py ``pp``: never "-0.0 pp"
