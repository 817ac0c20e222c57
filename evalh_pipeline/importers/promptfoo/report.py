"""The import report: every promptfoo construct that did not map, with its file and line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

#: ``error``: the imported eval does not do what the promptfoo config did (a variant, test or
#: assertion is missing, or will not run); ``note``: it runs, with the difference said.
Severity = Literal["error", "note"]


@dataclass(frozen=True)
class Finding:
    """One construct that did not map as it was: where it is, what it is, what was done instead."""

    file: str
    line: int | None
    where: str  # the key path in the promptfoo file, e.g. ``tests[2].assert[0]``
    what: str
    instead: str
    severity: Severity = "error"

    def text(self) -> str:
        """``file:line: where: what; instead`` (one line)."""
        place = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{place}: {self.severity}: {self.where}: {self.what}; {self.instead}"


@dataclass
class ImportReport:
    """The findings of one import, in the order they were met."""

    source: str
    findings: list[Finding] = field(default_factory=list)

    def add(self, finding: Finding) -> None:
        """Record ``finding`` once (a test expanded over list vars meets its constructs again)."""
        if finding not in self.findings:
            self.findings.append(finding)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    def markdown(self, summary: list[str]) -> str:
        """``import-report.md``: what was imported, then one line per finding."""
        lines = [f"# Import report: {self.source}", "", *summary, ""]
        if not self.findings:
            lines.append("Every construct mapped: nothing to report.")
        else:
            lines += [f"{len(self.errors)} error(s), {len(self.findings) - len(self.errors)} note(s):", ""]
            lines += [f"- {f.text()}" for f in self.findings]
        return "\n".join(lines) + "\n"
