"""Bytes accounting of workspaces: what was copied in, moved out, deleted, and left behind.

Every byte of a workspace's final tree leaves it either by a move into the artifacts
(rename, no copy) or by deletion at cleanup. ``leaked_bytes`` is what did neither, plus
anything still on disk after cleanup; a gross leak fails the run (Filesystem.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from evalh_pipeline.errors import InfrastructureError

# A leak above both limits is gross: small slack absorbs files changed during teardown.
LEAK_TOLERANCE_BYTES = 1 << 20
LEAK_TOLERANCE_FRACTION = 0.01


@dataclass
class WorkspaceAccounting:
    """Per-cell or aggregated bytes; :meth:`add` sums cells."""

    workspaces: int = 0
    seeded_bytes: int = 0           # copied into workspaces from fixtures
    final_bytes: int = 0            # in workspaces when the systems finished
    moved_bytes: int = 0            # workspace trees renamed into the artifacts
    copied_bytes: int = 0           # written into the artifacts by copy
    deleted_bytes: int = 0          # removed at cleanup
    leftover_bytes: int = 0         # still on disk after cleanup
    artifacts: int = 0
    stale_workspaces_removed: int = 0
    stale_bytes_removed: int = 0

    @property
    def leaked_bytes(self) -> int:
        return max(0, self.final_bytes - self.moved_bytes - self.deleted_bytes) + self.leftover_bytes

    def add(self, other: WorkspaceAccounting) -> None:
        for item in fields(self):
            setattr(self, item.name, getattr(self, item.name) + getattr(other, item.name))

    def mismatch(self) -> str | None:
        """A message when the leak is gross, else None."""
        leaked = self.leaked_bytes
        if leaked > LEAK_TOLERANCE_BYTES and leaked > LEAK_TOLERANCE_FRACTION * max(self.final_bytes, 1):
            return (f"workspace cleanup leaked {leaked} bytes: {self.final_bytes} bytes in workspaces, "
                    f"{self.moved_bytes} moved into artifacts, {self.deleted_bytes} deleted, "
                    f"{self.leftover_bytes} still on disk")
        return None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "leaked_bytes": self.leaked_bytes}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorkspaceAccounting:
        return cls(**{f.name: int(data.get(f.name, 0)) for f in fields(cls)})


class WorkspaceAccountingError(InfrastructureError, RuntimeError):
    """Cleanup left a gross amount of bytes behind: the run fails."""
