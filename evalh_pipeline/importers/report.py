"""The import report: every construct of the source that does not map, with its file and line.

Printed by the command and written beside the eval as ``import-report.md``. A line says what
was found and what was done instead; with ``--strict`` any line is an error and nothing is
written. A source that cannot be imported at all (not the tool's format, a missing or
unreadable file) is a :class:`BadSource`: one line, nothing written.
"""

from __future__ import annotations

from dataclasses import dataclass, field


def _where(file: str, line: int | None) -> str:
    return f"{file}:{line}" if line else file


class BadSource(Exception):
    """A source that cannot be imported: its one-line message names the file, line and key."""

    def __init__(self, file: str, line: int | None, key: str, message: str) -> None:
        self.file, self.line, self.key, self.message = file, line, key, message
        super().__init__(str(self))

    def __str__(self) -> str:
        text = " ".join(self.message.split())
        return f"{_where(self.file, self.line)} {self.key}: {text}" if self.key else f"{_where(self.file, self.line)}: {text}"


@dataclass(frozen=True)
class Unmapped:
    """One construct of the source that has no exact equivalent here, and what was done instead."""

    file: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        return f"{_where(self.file, self.line)} {self.key}: {' '.join(self.message.split())}"


@dataclass
class ImportReport:
    """What one import did not map (empty: everything maps)."""

    tool: str
    source: str
    unmapped: list[Unmapped] = field(default_factory=list)

    def add(self, file: str, line: int | None, key: str, message: str) -> None:
        """Record a construct that does not map (``message``: what it is and what was done instead)."""
        self.unmapped.append(Unmapped(file, line, key, message))

    def markdown(self, eval_name: str, cases: int) -> str:
        """``import-report.md``: the source, what was written, and every unmapped construct."""
        lines = [f"# Import report: {eval_name}", "",
                 f"Imported from {self.tool}: `{self.source}` ({cases} case{'s' if cases != 1 else ''}).", ""]
        if not self.unmapped:
            lines.append("Every construct maps: nothing was dropped or changed.")
        else:
            lines.append(f"{len(self.unmapped)} construct(s) do not map exactly (file:line key: what was done instead):")
            lines.append("")
            lines += [f"- `{_where(item.file, item.line)}` `{item.key}`: {' '.join(item.message.split())}"
                      for item in self.unmapped]
        return "\n".join(lines) + "\n"
