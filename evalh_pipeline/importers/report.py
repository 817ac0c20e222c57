"""The import report: every construct of the source that does not map as it was, with its
file, line and key, what it is and what was done instead.

Printed by ``evalh import`` and written beside the eval as ``import-report.md``; with
``--strict`` any finding is an error and nothing is written. A source that cannot be imported
at all (not the tool's format, a missing or unreadable file) is a :class:`BadSource`: one
line, nothing written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from evalh_pipeline.errors import UserError
from evalh_pipeline.config.errors import ConfigIssue

#: ``error``: the imported eval does not do what the source did (a variant, case or check is
#: missing, or will not run as it did); ``note``: it does, with the difference said.
Severity = Literal["error", "note"]
REPORT_NAME = "import-report.md"


def _where(file: str, line: int | None) -> str:
    return f"{file}:{line}" if line else file


def _one_line(text: str) -> str:
    return " ".join(text.split())


class BadSource(UserError):
    """A source that cannot be imported: one line naming the file, line and key, written as a
    configuration error is (``file:line key: message``)."""

    def __init__(self, file: str, line: int | None, key: str, message: str) -> None:
        self.file, self.line, self.key, self.message = file, line, key, message
        super().__init__(str(self))

    @classmethod
    def of(cls, issue: ConfigIssue) -> BadSource:
        """The bad source a configuration issue (a YAML file that does not parse) describes."""
        return cls(issue.file, issue.line, issue.key, issue.message)

    def __str__(self) -> str:
        where = _where(self.file, self.line)
        return f"{where} {self.key}: {_one_line(self.message)}" if self.key else f"{where}: {_one_line(self.message)}"


@dataclass(frozen=True)
class Finding:
    """One construct that did not map as it was: where it is, what it is, what was done instead."""

    file: str
    line: int | None
    key: str  # the key path in the source file, e.g. ``tests[2].assert[0]``
    what: str
    instead: str
    severity: Severity = "error"

    def text(self) -> str:
        """``file:line: error|note: key: what; what was done instead`` (one line)."""
        key = f"{self.key}: " if self.key else ""
        return f"{_where(self.file, self.line)}: {self.severity}: {key}{_one_line(self.what)}; {_one_line(self.instead)}"


@dataclass
class ImportReport:
    """The findings of one import, in the order they were met."""

    source: str
    findings: list[Finding] = field(default_factory=list)

    def add(self, file: str, line: int | None, key: str, what: str, instead: str,
            severity: Severity = "error") -> None:
        """Record a construct that did not map, once (a construct met again is not repeated)."""
        finding = Finding(file, line, key, what, instead, severity)
        if finding not in self.findings:
            self.findings.append(finding)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def counts(self) -> str:
        """``N error(s), M note(s)``."""
        return f"{len(self.errors)} error(s), {len(self.findings) - len(self.errors)} note(s)"

    def markdown(self, title: str, summary: list[str]) -> str:
        """``import-report.md``: the source and what was imported, then one line per finding."""
        lines = [f"# Import report: {title}", "", f"Imported from `{self.source}`:", "", *summary, ""]
        if not self.findings:
            lines.append("Every construct maps: nothing was dropped or changed.")
        else:
            lines += [f"{self.counts()}:", "", *(f"- {f.text()}" for f in self.findings)]
        return "\n".join(lines) + "\n"
