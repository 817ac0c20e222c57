"""Progress reporting from the runner to whoever is watching (a CLI bar, Dagster logs)."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Receives counts as cells or evaluations complete."""

    def start(self, phase: str, total: int | None) -> None: ...

    def advance(self, phase: str, n: int = 1) -> None: ...

    def finish(self, phase: str) -> None: ...


class NoProgress:
    """The default: report nothing."""

    def start(self, phase: str, total: int | None) -> None:
        pass

    def advance(self, phase: str, n: int = 1) -> None:
        pass

    def finish(self, phase: str) -> None:
        pass
