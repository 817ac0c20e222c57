"""ConfigError: a bad authored file, reported as ``file:line key: problem``."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalh_pipeline.errors import UserError


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in an authored file, located by file, line and key path."""

    file: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        # One line whatever the file held: a key or a quoted value may contain line breaks.
        where = f"{self.file}:{self.line}" if self.line else self.file
        key = self.key if self.key.isprintable() else self.key.encode("unicode_escape").decode("ascii")
        message = " ".join(self.message.splitlines())
        return f"{where} {key}: {message}" if key else f"{where}: {message}"


@dataclass
class ConfigError(UserError):
    """One or more problems that stop an eval from loading. Nothing is run or written."""

    issues: list[ConfigIssue] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join(str(i) for i in self.issues)

    def __reduce__(self) -> tuple[type["ConfigError"], tuple[list[ConfigIssue]]]:
        # Exceptions pickle their ``args``, which a dataclass exception leaves empty: the
        # engine process (defs/overlap.py) sends a bad dataset row's error to the CLI's.
        return type(self), (self.issues,)

    @classmethod
    def single(cls, file: str, line: int | None, key: str, message: str) -> "ConfigError":
        return cls([ConfigIssue(file, line, key, message)])
